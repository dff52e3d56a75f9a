"""The wiring of `chronos tune --jobs FILE`: one process tuning every job of a jobs file, each as `chronos tune`
would tune it alone (the same `open_job`), stepped by one controller (`chronos.tune.controller`).

What the jobs share is built once here: the journal (one SQLite file; each job's entries under its own name), the
REST client, one metrics registry and endpoint (every job under its `job_name` label), one reporter scrape and one
end-offsets request per broker per round (`chronos.signals.shared_reads`), and a bound on the model-fitting
children alive at once. What is each job's own is built on its first turn, on a worker, so fifty jobs start in
parallel and one that cannot be found is let go, said why, without holding up the others.

The file is read again when it changes (its modification time) and on SIGHUP: jobs it lost are let go, new ones
taken up, one whose entry changed is let go and taken up again; the other jobs are not touched. A file that no
longer reads is said in one line and the jobs go on as they were. A job that left on its own (cancelled from outside,
or not startable) is taken up again only when its entry changes, or on SIGHUP.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from threading import Event

from prometheus_client import CollectorRegistry

from chronos.cli import wiring
from chronos.cli.common import err, out, print_json_line
from chronos.cli.tune_view import TuneDisplay
from chronos.cli.tuning_session import JobWanted, SharedParts, TunerFlags, open_job
from chronos.errors import InvalidInput
from chronos.metrics.exporter import Heartbeat, TuneMetrics, serve
from chronos.signals.shared_reads import SharedReads
from chronos.tune.controller import Controller, ControllerSettings, Lateness
from chronos.tune.discovery import SWITCH
from chronos.tune.job_targets import JobTarget, changes
from chronos.tune.target_sources import DISCOVER_EVERY_S, DiscoveredTargets, FileTargets, TargetSource
from chronos.tune.tuned_member import TunedMember

RELOAD_CHECK_S = 1.0  # how often the file's modification time (and a SIGHUP) is looked at


@dataclass(frozen=True, kw_only=True)
class FleetRequest(TunerFlags):
    """`chronos tune --jobs` / `--discover`: where the jobs come from, and how many things run at once."""

    jobs_file: Path | None  # the jobs, listed ...
    workers: int = 8
    fits_at_once: int = 2
    discover: tuple[str, ...] = ()  # ... or found: the annotated FlinkDeployments of these namespaces
    defaults: dict[str, object] = field(default_factory=dict)  # with discovery: the policy every job starts from
    discover_every_s: float = DISCOVER_EVERY_S


@dataclass
class JobTally:
    """One job's run, for the summary."""

    name: str
    flink_name: str = ""
    job_id: str = ""
    decisions: int = 0
    retunes: int = 0
    failures: int = 0
    latency_violation_s: float = 0.0
    recovery_violation_s: float = 0.0
    left: str | None = None


@dataclass(frozen=True)
class FleetSummary:
    jobs: tuple[JobTally, ...]
    lateness: Lateness
    elapsed_s: float
    dry_run: bool


class _FleetJob:
    """A job of the file as the controller's Member: built on its first turn (`start`), closed with all it built."""

    def __init__(self, target: JobTarget, fleet: _Fleet) -> None:
        self.name = target.name
        self.target = target
        self._fleet = fleet
        self._resources = ExitStack()
        self._member: TunedMember | None = None
        self.display = TuneDisplay(out if fleet.request.as_json else err, fleet.request.as_json, tag=target.name)
        self.tally = JobTally(target.name)

    def start(self) -> None:
        try:
            self._member = self._fleet.build(self, self._resources)
        except BaseException:
            self._resources.close()
            raise
        self._member.start()

    def step(self) -> None:
        assert self._member is not None
        self._member.step()

    def ended(self) -> str | None:
        return None if self._member is None else self._member.ended()

    def close(self) -> None:
        member, self._member = self._member, None
        try:
            if member is not None:
                member.close()
                t, qos = self.tally, member.loop.qos
                t.job_id = member.loop.state.job.job_id
                t.decisions, t.retunes, t.failures = self.display.decisions, self.display.retunes, self.display.failures
                t.latency_violation_s, t.recovery_violation_s = round(qos.latency_s, 1), round(qos.recovery_s, 1)
        finally:
            self._resources.close()
            self._fleet.released(self)


@dataclass
class _Fleet:
    """The shared parts and the jobs' bookkeeping: which Flink job names are tuned (each by one job only: the
    journal keeps a job's entries under that name), which jobs left on their own."""

    request: FleetRequest
    shared: SharedParts
    events: TuneDisplay
    controller: Controller | None = None
    jobs: dict[str, _FleetJob] = field(default_factory=dict)  # by file name, while tuned
    flink_names: dict[str, str] = field(default_factory=dict)  # Flink job name -> file name
    let_go: dict[str, JobTarget] = field(default_factory=dict)
    tallies: list[JobTally] = field(default_factory=list)
    removing: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def build(self, job: _FleetJob, resources: ExitStack) -> TunedMember:
        t = job.target
        wanted = JobWanted(policy=t.policy, job=t.job_id, flink_deployment=t.flink_deployment,
                           namespace=t.namespace, job_file=t.job_file)
        shared = self.shared
        if t.rest_url is not None:  # its own cluster (a FlinkDeployment's): a client of its own
            shared = replace(shared, client=resources.enter_context(
                wiring.flink_client(shared.flags.stack_dir, t.rest_url, patient=True)))
        client = shared.rest_client()
        opened = open_job(shared, wanted, job.display, resources)
        flink_name = opened.tuned.spec.name
        with self.lock:
            other = self.flink_names.get(flink_name)
            if other is not None and other != job.name:
                raise InvalidInput(f"job {opened.tuned.job_id} is {flink_name!r} in Flink, which job {other} of this "
                                   "file tunes already (one job per Flink job name: the journal keeps a job's "
                                   "entries under that name)")
            self.flink_names[flink_name] = job.name
        job.tally.flink_name = flink_name
        resources.callback(self._forget_name, flink_name, job.name)
        return TunedMember(job.name, opened.loop, lambda job_id: client.job(job_id).state)

    def _forget_name(self, flink_name: str, name: str) -> None:
        with self.lock:
            if self.flink_names.get(flink_name) == name:
                del self.flink_names[flink_name]

    def released(self, job: _FleetJob) -> None:
        with self.lock:
            self.tallies.append(job.tally)
            if self.jobs.get(job.name) is job:
                del self.jobs[job.name]
            if job.name not in self.removing:
                self.let_go[job.name] = job.target  # left on its own: not taken up again for the same entry
            self.removing.discard(job.name)

    # -- the controller's FleetObserver ------------------------------------------------------------------
    def joined(self, name: str) -> None:
        self._say("joined", name, f"[{name}] taken up")

    def left(self, name: str, why: str) -> None:
        with self.lock:  # jobs are closed side by side when the controller stops
            for tally in reversed(self.tallies):
                if tally.name == name and tally.left is None:
                    tally.left = why
                    break
        self._say("left", name, f"[{name}] let go: {why}", why=why)

    def trouble(self, name: str, error: str) -> None:
        self._say("trouble", name, f"[{name}] {error}", error=error)

    def _say(self, kind: str, name: str, text: str, **fields: object) -> None:
        if self.request.as_json:
            print_json_line({"event": kind, "at": time.strftime("%H:%M:%S"), "job_name": name, "text": text, **fields})
        else:
            self.events.message(text)

    # -- the jobs file ------------------------------------------------------------------------------------
    def apply(self, targets: tuple[JobTarget, ...], source: TargetSource) -> None:
        """Bring the tuned jobs to the source's: the others untouched (`chronos.tune.job_targets.changes`)."""
        assert self.controller is not None
        with self.lock:
            tuned = {name: job.target for name, job in self.jobs.items()}
            wanted = changes(targets, tuned, self.let_go, source.lost, source.changed)
            self.removing.update(name for name, _ in wanted.remove)
        for name, why in wanted.remove:
            self.controller.remove(name, why)
        for target in wanted.add:
            job = _FleetJob(target, self)
            with self.lock:
                if target.name in self.jobs:
                    continue  # its predecessor is still leaving: taken up on the next look
                self.let_go.pop(target.name, None)
                self.jobs[target.name] = job
            self.controller.add(job)

    def pending(self) -> bool:
        """A job whose entry changed is still leaving: look again next time even if the file did not change."""
        with self.lock:
            return bool(self.removing)


class _Deferred:
    """What the jobs' source says before the run's display exists, said once it does (then passed straight on)."""

    def __init__(self) -> None:
        self._held: list[str] = []
        self._say: Callable[[str], None] | None = None

    def __call__(self, line: str) -> None:
        if self._say is None:
            self._held.append(line)
        else:
            self._say(line)

    def to(self, say: Callable[[str], None]) -> None:
        self._say = say
        for line in self._held:
            say(line)
        self._held.clear()


class _Reload:
    """Looks at the jobs' source every second: a change, a SIGHUP (which also forgets the jobs that left on their
    own, so they are tried again), or a job still leaving whose entry changed."""

    def __init__(self, fleet: _Fleet, source: TargetSource) -> None:
        self._fleet, self._source = fleet, source
        self.hangup = threading.Event()

    def run(self, stop: Event) -> None:
        while not stop.wait(RELOAD_CHECK_S):
            self.look()

    def look(self) -> None:
        hangup = self.hangup.is_set()
        self.hangup.clear()
        targets = self._source.look(hangup or self._fleet.pending())
        if targets is None:
            return
        if hangup:
            with self._fleet.lock:
                self._fleet.let_go.clear()
        self._fleet.apply(targets, self._source)


@contextmanager
def fleet_session(request: FleetRequest) -> Iterator[tuple[Controller, _Fleet, _Reload]]:
    say = _Deferred()
    source: FileTargets | DiscoveredTargets
    deployments = None
    if request.jobs_file is not None:
        source = FileTargets(request.jobs_file, say)
    else:
        deployments = wiring.deployment_api()  # the lister, and every discovered job's realizer
        source = DiscoveredTargets(deployments, request.discover, request.defaults, request.discover_every_s, say)
    targets = source.first()  # a jobs file that does not read refuses the run, before anything starts
    with ExitStack() as resources:
        journal = wiring.journal(request.db)
        resources.callback(journal.close)
        registry = CollectorRegistry()
        heartbeat = Heartbeat(request.stall_after_s)
        # Discovered FlinkDeployments each reach their own cluster: no local stack, no --rest-url needed.
        client = None if request.jobs_file is None and request.rest_url is None else \
            resources.enter_context(wiring.flink_client(request.stack_dir, request.rest_url, patient=True))
        reads = SharedReads(fresh_s=request.loop.collect_every_s / 2)
        resources.callback(reads.close)
        shared = SharedParts(journal=journal, client=client, metrics=TuneMetrics(registry), heartbeat=heartbeat,
                             deployments=deployments,
                             flags=request, reads=reads, fit_slots=threading.BoundedSemaphore(request.fits_at_once))
        events = TuneDisplay(out if request.as_json else err, request.as_json)  # the run's own lines (never started: no panel)
        fleet = _Fleet(request, shared, events)
        controller = Controller(ControllerSettings(step_every_s=request.loop.collect_every_s,
                                                   workers=request.workers), fleet)
        fleet.controller = controller
        server = serve(registry, request.metrics_port, request.metrics_address, heartbeat) \
            if request.metrics_port >= 0 else None
        if server is not None:
            resources.callback(server.close)
            events.message(f"metrics on http://{request.metrics_address}:{server.port}/metrics")
        say.to(events.message)
        where = (f"the {len(targets)} jobs of {request.jobs_file} (read again when it changes or on SIGHUP)"
                 if request.jobs_file is not None else
                 f"the {len(targets)} FlinkDeployments annotated {SWITCH}: \"true\" in {', '.join(request.discover)} "
                 f"(listed every {request.discover_every_s:g} s, and on SIGHUP)")
        events.message(f"tuning {where}; {request.workers} steps at once, {request.fits_at_once} model fits at once"
                       + (", dry run" if request.loop.dry_run else ""))
        reload = _Reload(fleet, source)
        fleet.apply(targets, source)
        yield controller, fleet, reload


def run_fleet(request: FleetRequest, stop: Event) -> FleetSummary:
    """Tune every job of the file until `stop` is set or the duration is over."""
    started = time.monotonic()
    with fleet_session(request) as (controller, fleet, reload), _on_hangup(reload.hangup):
        stop_reload = threading.Event()
        watcher = threading.Thread(target=reload.run, args=(stop_reload,), name="chronos-jobs-file", daemon=True)
        watcher.start()
        try:
            controller.run(stop, request.run_for_s)
        except KeyboardInterrupt:
            if not stop.is_set():
                raise
            fleet.events.message("stopped within a step; anything it began is journaled and finished by the next run")
        finally:
            stop_reload.set()
            watcher.join(5)
    return FleetSummary(tuple(sorted(fleet.tallies, key=lambda t: t.name)), controller.lateness(),
                        round(time.monotonic() - started, 1), request.loop.dry_run)


@contextmanager
def _on_hangup(hangup: threading.Event) -> Iterator[None]:
    """SIGHUP reads the jobs file again (the daemon convention); the previous handler is put back on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGHUP, lambda *_: hangup.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)
