"""The wiring of one `chronos tune`: journal, realizer, model book, collector, metrics, heartbeat and display
built from the parsed flags, run until stopped, and closed in reverse whatever happens. `tune()` only
parses flags into a `TuneRequest`; everything it starts is started and stopped here."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from threading import Event
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from chronos.cli import wiring
from chronos.cli.common import err, out
from chronos.cli.tune_view import TuneDisplay, TuneObservers
from chronos.errors import ChronosError, InvalidInput, redact
from chronos.flink.rest import FlinkRestClient
from chronos.metrics.exporter import Heartbeat, TuneMetrics, serve
from chronos.metrics.tune_observer import MetricsObserver
from chronos.optimizer.policy import TunePolicy
from chronos.optimizer.recovery_config import FlinkSettings
from chronos.optimizer.recovery_proposal import JOB_LEVEL_CHANGES, RecoveryProposal
from chronos.stack.job_records import JobRecord
from chronos.stack.known_jobs import job_to_tune, unrecorded_job
from chronos.tune.journal import TuneJournal
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.no_program import ADOPT_HINT, NoProgram
from chronos.tune.pacer import Pacer
from chronos.tune.realization import JobRealization, Paced, Restarting
from chronos.tune.realizer_choice import RealizerChoice, Requested, choose_realizer
from chronos.tune.retune import Realizer, TunedJob

if TYPE_CHECKING:
    from chronos.k8s.flink_deployment import DeploymentApi
    from chronos.signals.shared_reads import SharedReads
    from chronos.tune.fitting import FitSlots


@dataclass(frozen=True, kw_only=True)
class TunerFlags:
    """The flags every `chronos tune` takes, one job or many: where it reads and writes, how it runs and shows it."""

    loop: LoopSettings
    db: Path
    stack_dir: Path
    rest_url: str | None
    reporter_urls: list[str] | None
    metrics_port: int
    metrics_address: str
    fit_timeout_s: float
    stall_after_s: float
    run_for_s: float | None
    as_json: bool
    realize: Requested = "auto"


@dataclass(frozen=True, kw_only=True)
class TuneRequest(TunerFlags):
    """One job's `chronos tune`: the job, its policy and what goes with one job only."""

    policy: TunePolicy
    job: str | None
    flink_deployment: str | None = None
    namespace: str = "default"
    job_file: Path | None = None
    allow_fault: bool = False  # one TaskManager kill to measure a recovery before any model exists
    pause_watch_s: float = 3.0  # pauses measured at the start for the recovery-settings proposal (0: none)
    job_recovery_settings: bool = True  # the proposal's job-level lines go with a restart retune

    def __post_init__(self) -> None:
        if self.flink_deployment and self.allow_fault:
            raise InvalidInput("--allow-fault probes a job on the local stack only (it kills one of its TaskManagers); "
                               "not a FlinkDeployment")


@dataclass(frozen=True)
class TuneSummary:
    job_id: str
    interval_ms: int  # the job's own (a paced job's fallback)
    paced_ms: int | None  # the cadence chronos held it at (None: not paced)
    decisions: int
    retunes: int
    failures: int
    latency_violation_s: float
    recovery_violation_s: float
    elapsed_s: float
    dry_run: bool


@dataclass(frozen=True, kw_only=True)
class SharedParts:
    """What every job of one tuner shares (one job's `chronos tune`, or the many of `chronos tune --jobs`): the
    journal (one SQLite file, thread-safe), the REST client, the metrics registry and heartbeat, the loop's settings,
    and for many jobs the batched reads and the bound on model-fitting children."""

    journal: TuneJournal
    client: FlinkRestClient | None  # None: every job reaches its own cluster (discovered FlinkDeployments)
    metrics: TuneMetrics
    heartbeat: Heartbeat
    flags: TunerFlags
    reads: SharedReads | None = None
    fit_slots: FitSlots | None = None
    deployments: DeploymentApi | None = None  # one Kubernetes client for every FlinkDeployment (None: made per job)

    def rest_client(self) -> FlinkRestClient:
        if self.client is None:
            raise InvalidInput("this job names no Flink REST URL of its own, and the controller has none (--rest-url)")
        return self.client


@dataclass(frozen=True, kw_only=True)
class JobWanted:
    """One job to tune: how it is found and the policy it is tuned by."""

    policy: TunePolicy
    job: str | None = None
    flink_deployment: str | None = None
    namespace: str = "default"
    job_file: Path | None = None


@dataclass(frozen=True)
class OpenedJob:
    loop: TuneLoop
    tuned: TunedJob
    policy: TunePolicy
    choice: RealizerChoice
    target: TuneTarget
    observers: TuneObservers
    job_settings: tuple[tuple[str, str], ...]


def open_job(shared: SharedParts, wanted: JobWanted, display: TuneDisplay, resources: ExitStack, *,
             probe: Callable[[], str] | None = None,
             job_settings: Callable[[], tuple[tuple[str, str], ...]] = tuple) -> OpenedJob:
    """One job's loop with everything behind it (its target, models, pacer, collector, realization), each thing
    it starts closed by `resources`; said once at its start: what is tuned, to what, and how it is realized.
    `job_settings`: the recovery proposal's job-level lines for its restart retunes, asked once the job is known."""
    observers = TuneObservers(display, MetricsObserver(shared.metrics, shared.heartbeat))
    client, journal = shared.rest_client(), shared.journal
    target = _target(shared, wanted)
    record, retuner, pace_only = target.record, target.realizer, target.pace_only
    # A job chronos has no program of cannot be resubmitted: restart retunes off, its own interval stays.
    policy = wanted.policy.model_copy(update={"max_retunes_per_hour": 0}) if pace_only else wanted.policy
    book = wiring.model_book(shared.flags.db, record.spec.name, journal, policy.strategy,
                             fit_timeout_s=shared.flags.fit_timeout_s,
                             latency_rising=record.spec.commits_on_checkpoint, slots=shared.fit_slots)
    tuned = TunedJob(record.job_id, record.spec, record.settings)
    trigger = wiring.checkpoint_trigger(client)
    choice = choose_realizer(shared.flags.realize, lambda: trigger.offers_checkpoint_trigger(record.job_id))
    if pace_only and not choice.paced:
        raise InvalidInput(f"job {record.job_id} has no job file here, so chronos can only pace its checkpoints, "
                           f"and not on this run: {choice.why}; adopt it (`{ADOPT_HINT.format(job_id=record.job_id)}`)"
                           " to retune it by restarts")
    pacer = Pacer(trigger, journal, observers, record.spec.name)  # not pacing, it measures the checkpoints' interval
    stop_pacing = threading.Event()
    thread = threading.Thread(target=pacer.run, args=(stop_pacing,), name=f"chronos-pacer-{record.spec.name}",
                              daemon=True)
    thread.start()
    resources.callback(thread.join, 2.0)  # a daemon: a stop is not held up by a trigger in flight
    resources.callback(pacer.wake)
    resources.callback(stop_pacing.set)
    if target.without_job_file:
        collector = wiring.flink_metrics_collector(client, shared.flags.stack_dir, record, policy.latency_window_s,
                                                   policy.latency_p99_ms is not None, shared.flags.reporter_urls,
                                                   cadence_ms=lambda: pacer.cadence_ms,
                                                   job_file_hint="--job-file" if wanted.flink_deployment else None,
                                                   reads=shared.reads)
    else:
        collector = wiring.tune_collector(client, shared.flags.stack_dir, record, policy.latency_window_s,
                                          shared.flags.reporter_urls, cadence_ms=lambda: pacer.cadence_ms,
                                          reads=shared.reads)
    resources.callback(collector.close)
    settings = job_settings()
    restarting = Restarting(retuner, settings, follow=pacer.follow)
    realization: JobRealization = Paced(pacer, restarting) if choice.paced else restarting
    loop = TuneLoop(tuned, policy, collector, realization, journal, book, observers, shared.flags.loop, probe=probe,
                    recovery_settings=wiring.recovery_settings_in_force(client, shared.flags.stack_dir, shared.flags.rest_url))
    shared.metrics.set_targets(record.spec.name,
                               None if policy.latency_p99_ms is None else policy.latency_p99_ms / 1000,
                               policy.recovery_s)
    display.message(f"tuning {record.spec.name} ({record.job_id}) at {record.settings.interval_ms / 1000:g} s: "
                    + ("no latency target" if policy.latency_p99_ms is None else f"p99 <= {policy.latency_p99_ms:g} ms")
                    + f", recovery <= {policy.recovery_s:g} s, "
                    f"strategy {policy.strategy}{', dry run' if shared.flags.loop.dry_run else ''}")
    if target.said:
        display.message(target.said)
    observers.watching(tuned)
    restart_path = "patching the FlinkDeployment" if wanted.flink_deployment else "stop-with-savepoint and resubmit"
    how = (f"{choice.why}; the job's own interval (the fallback) stays: without a job file there is no program "
           "to restart it with") if pace_only else \
        f"{choice.why}; {'the fallback changes' if choice.paced else 'a change is made'} by {restart_path}"
    observers.realizing(tuned, "paced" if choice.paced else "kubernetes" if wanted.flink_deployment else "restart",
                        how)
    observers.describe_models(book.models)
    if book.last_fit_error is not None:
        observers.fit_failed(tuned, book.last_fit_error)
    return OpenedJob(loop, tuned, policy, choice, target, observers, settings)


@contextmanager
def tuning_session(request: TuneRequest) -> Iterator[tuple[TuneLoop, TuneDisplay]]:
    """The loop and its display, with every adapter behind them built and, on exit, closed."""
    with ExitStack() as resources:
        journal = wiring.journal(request.db)
        resources.callback(journal.close)
        registry = CollectorRegistry()
        metrics = TuneMetrics(registry)
        heartbeat = Heartbeat(request.stall_after_s)
        display = TuneDisplay(err if not request.as_json else out, request.as_json)
        client = resources.enter_context(wiring.flink_client(request.stack_dir, request.rest_url, patient=True))
        shared = SharedParts(journal=journal, client=client, metrics=metrics, heartbeat=heartbeat, flags=request)
        wanted = JobWanted(policy=request.policy, job=request.job, flink_deployment=request.flink_deployment,
                           namespace=request.namespace, job_file=request.job_file)
        asked: list[tuple[RecoveryProposal, FlinkSettings] | str | None] = []

        def job_settings() -> tuple[tuple[str, str], ...]:
            """Once the job is known (an unknown one is refused before the pauses are watched)."""
            asked.append(_recovery_proposal(request, client) if request.pause_watch_s > 0 else None)
            return _job_settings(request, asked[0]) if asked[0] is not None else ()

        probe = wiring.recovery_probe(request.stack_dir) if request.allow_fault else None
        server = serve(registry, request.metrics_port, request.metrics_address, heartbeat) \
            if request.metrics_port >= 0 else None
        if server is not None:
            resources.callback(server.close)
        display.start()
        resources.callback(display.stop)
        if server is not None:
            display.message(f"metrics on http://{request.metrics_address}:{server.port}/metrics")
        opened = open_job(shared, wanted, display, resources, probe=probe, job_settings=job_settings)
        tuned, choice, proposed = opened.tuned, opened.choice, asked[0]
        with_settings = opened.job_settings
        if isinstance(proposed, str):
            display.message(proposed)
        elif proposed is not None:
            where = (f" --flink-deployment {request.flink_deployment} --namespace {request.namespace} --rest-url "
                     f"{redact(request.rest_url or '')}" if request.flink_deployment else "")  # a line to copy: no password
            with_retune = ("" if not with_settings else " (its job-level lines go with this job's next restart retune"
                           + ("; paced, it restarts only for a fallback change)" if choice.paced else ")"))
            opened.observers.recovery_proposal(tuned, proposed[0], proposed[1].lines(),
                                               f"chronos recommend --apply{where}{with_retune}", with_settings)
        yield opened.loop, display


@dataclass(frozen=True)
class TuneTarget:
    """The job to tune and what can act on it. `without_job_file`: its topics are unknown, so its signals come from
    Flink's own metrics (chronos.signals.flink_metrics); `pace_only`: no program to resubmit it with either (a job
    submitted elsewhere), so it is paced and never restarted (a FlinkDeployment without a job file is restarted by
    patching it: its operator owns the program); `said`: what the user is told once, at the start, of what a job
    file would add."""

    record: JobRecord
    realizer: Realizer
    without_job_file: bool = False
    pace_only: bool = False
    said: str = ""


def _target(shared: SharedParts, wanted: JobWanted) -> TuneTarget:
    client, journal = shared.rest_client(), shared.journal
    if wanted.flink_deployment:
        record, realizer = wiring.deployment_to_tune(client, wanted.flink_deployment, wanted.namespace,
                                                     wanted.job_file, journal, shared.deployments)
        if wanted.job_file is not None:
            return TuneTarget(record, realizer)
        return TuneTarget(record, realizer, without_job_file=True, said=(
            f"{record.spec.name} ({record.job_id}) on FlinkDeployment {wanted.namespace}/{wanted.flink_deployment} "
            "has no job file here: chronos reads its input rate, lag and throughput from Flink's metrics; with one "
            "(--job-file) it could also read its end-to-end latency from its output topic, and profile it"))
    known = job_to_tune(client, wiring.job_records(shared.flags.stack_dir), journal, wanted.job,
                        str(shared.flags.stack_dir / "jobs"))
    if known is not None:
        return TuneTarget(known, wiring.retuner(client, shared.flags.stack_dir, journal, known.io))
    assert wanted.job is not None  # only a job named can be one chronos has no record of
    record = unrecorded_job(client, wanted.job)
    return TuneTarget(record, NoProgram(), without_job_file=True, pace_only=True, said=(
        f"{record.spec.name} ({record.job_id}) has no job file here: chronos paces its checkpoints and reads its input "
        "rate, lag and throughput from Flink's metrics. A job file would also let it read the end-to-end latency (from "
        "the output topic), move the job's own interval by a restart, and profile it: "
        f"`{ADOPT_HINT.format(job_id=record.job_id)}`"))


def _recovery_proposal(request: TuneRequest, client: FlinkRestClient) -> tuple[RecoveryProposal, FlinkSettings] | str:
    """Cluster-level settings are proposed, not applied: putting them in force restarts Flink (every job on it
    savepointed and resumed), which is the operator's call (`chronos recommend --apply`). Why there is none, if so."""
    try:
        proposed = wiring.recovery_proposal(client, request.stack_dir, request.rest_url, request.pause_watch_s)
    except ChronosError as exc:
        return f"no recovery-settings proposal: {exc}"
    return proposed.proposal, proposed.lines


def _job_settings(request: TuneRequest, proposed: tuple[RecoveryProposal, FlinkSettings] | str) -> tuple[tuple[str, str], ...]:
    """The proposal's job-level lines, when it changes any (restart delay, task-local recovery) and the job is
    retuned by resubmission here (a FlinkDeployment takes them with `chronos recommend --apply`)."""
    if isinstance(proposed, str) or request.flink_deployment or not request.job_recovery_settings:
        return ()
    proposal, lines = proposed
    if not any(c.what in JOB_LEVEL_CHANGES for c in proposal.changes):
        return ()
    return lines.of_scope("job").values


def run_tuner(request: TuneRequest, stop: Event) -> TuneSummary:
    """Tune until `stop` is set or the duration is over; what it did. A stop that had to cut a step short (the
    KeyboardInterrupt graceful_stop raises once the step outlives its grace) ends the run as any stop does: what
    the step had begun is journaled, and the next run finishes it."""
    with tuning_session(request) as (loop, display):
        started = time.monotonic()
        try:
            loop.start()
            loop.run(stop, request.run_for_s)
        except KeyboardInterrupt:
            if not stop.is_set():
                raise
            display.message("stopped within a step; anything it began is journaled and finished by the next run")
    job = loop.state.job
    return TuneSummary(job.job_id, job.settings.interval_ms, job.paced_ms, display.decisions, display.retunes, display.failures,
                       round(loop.qos.latency_s, 1), round(loop.qos.recovery_s, 1),
                       round(time.monotonic() - started, 1), request.loop.dry_run)
