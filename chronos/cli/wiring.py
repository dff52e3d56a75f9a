"""The one place where real adapters are built from the stack state and command-line overrides."""

from __future__ import annotations

import contextlib
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from chronos.chaos.experiment import Action, Load
from chronos.chaos.faults import FaultInjector
from chronos.errors import ChronosError, InvalidInput, StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestCheckpointTrigger, RestJobControl
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import CliSubmitter, JobSubmitter, RestSubmitter
from chronos.jobs.bounded_input import ExperimentInput
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.k8s.flink_deployment import DeploymentRealizer
from chronos.model import (
    TERMINAL_STATES,
    CheckpointSettings,
    JobIO,
    JobSpec,
    RecoveryMeasurement,
    check_bootstrap,
    check_url,
)
from chronos.optimizer.phase_model import PhaseModel, RecoveryConditions, fit_phase_model
from chronos.optimizer.phase_observations import live_phase_observation, phase_observation
from chronos.optimizer.recovery_config import FlinkSettings, in_force, parse_version, recovery_settings, settings_config
from chronos.optimizer.recovery_proposal import RecoveryProposal, propose_recovery
from chronos.profiler.input_sample import InputSample
from chronos.profiler.live_watcher import LiveWatcher
from chronos.profiler.settings import ProfileSettings
from chronos.profiler.store import ProfileStore
from chronos.rates import TraceRate
from chronos.signals.live import LiveSignals
from chronos.signals.taskmanager_pauses import watch_pauses
from chronos.signals.tune_signals import KafkaJobCollector
from chronos.stack.cluster_restart import LocalClusterRestarter, PlanFile
from chronos.stack.faults import KillPythonWorker, KillTaskManager, PauseTaskManager, RestartKafka, resume_taskmanagers
from chronos.stack.host_load import HostMeter
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.stack.locations import default_cache_dir
from chronos.stack.profiling_clusters import LocalClusterPool
from chronos.stack.service_account import ServiceAccount, account_of
from chronos.stack.state import StackState, load_state
from chronos.tune.cluster_reconfigure import ClusterReconfigurer
from chronos.tune.fitting import ModelBook
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob


def require_stack(stack_dir: Path) -> StackState:
    """The running stack's state. A state file none of whose processes is still the one it recorded
    (left by a crash or a reboot) is a stopped stack: its ports and PIDs may belong to anything now."""
    state = load_state(stack_dir)
    if state is None:
        raise StackError(f"no stack is running in {stack_dir}; start one with `chronos stack up`")
    if not state.any_running():
        raise StackError(f"no stack is running in {stack_dir} (its state file is stale: no process it records is "
                         "running); `chronos stack down` clears it, `chronos stack up` starts one")
    return state


def rest_url(stack_dir: Path, override: str | None) -> str:
    return check_url(override, "--rest-url") if override else require_stack(stack_dir).rest_url


def bootstrap(stack_dir: Path, override: str | None) -> str:
    return check_bootstrap(override) if override else require_stack(stack_dir).bootstrap


def flink_client(stack_dir: Path, override: str | None, patient: bool = False) -> FlinkRestClient:
    """The cluster's REST client; `patient` for a long-running part (chronos.flink.rest says why)."""
    url = rest_url(stack_dir, override)
    return FlinkRestClient.patient(url) if patient else FlinkRestClient(url)


def submitter(path: str, client: FlinkRestClient, stack_dir: Path) -> JobSubmitter:
    dist = find_distribution()
    state = load_state(stack_dir)
    inner: JobSubmitter
    if path == "cli":
        state = require_stack(stack_dir)
        home = state.flink_home
        inner = CliSubmitter(dist, client.base_url, home / "conf", home / "log", home / "lib",
                             account_of(Path(state.services_dir)).run_as())
    else:
        inner = RestSubmitter(client, dist.python_jar)
    if state is None or state.service_user is None:
        return inner
    return ReadableFirst(inner, account_of(Path(state.services_dir)))


class ReadableFirst:
    """Submission to a stack whose services run as another user: a program file that user cannot read
    fails inside Flink as "Could not execute application"; here it is one line naming the file."""

    def __init__(self, inner: JobSubmitter, account: ServiceAccount) -> None:
        self._inner, self._account = inner, account

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        files = [spec.python_file] if spec.python_file else []
        files += [spec.args[i + 1] for i, arg in enumerate(spec.args[:-1]) if arg == "--sql"]
        self._account.require_readable([Path(f) for f in files], "put the job's files where that user can read them")
        return self._inner.submit(spec, settings, savepoint)


def job_records(stack_dir: Path) -> JobRecordStore:
    return JobRecordStore(stack_dir / "jobs")


def savepoint_dir(stack_dir: Path) -> Path:
    return require_stack(stack_dir).savepoint_dir


def chronos_job(client: FlinkRestClient, stack_dir: Path, job_id: str | None) -> JobRecord:
    """The job to act on: the one named, or the single running job chronos submitted here."""
    store = job_records(stack_dir)
    if job_id is None:
        running = {j.jid for j in client.jobs() if j.state == "RUNNING"}
        mine = [r for r in store.all() if r.job_id in running]
        if len(mine) != 1:
            raise InvalidInput(f"{len(mine)} running jobs were submitted by chronos here; name one with --job")
        return mine[0]
    record = store.get(job_id)
    if record is None:
        raise InvalidInput(f"job {job_id} was not submitted by chronos here: its topics are unknown")
    client.job(job_id)
    return record


def job_io(record: JobRecord) -> JobIO:
    """Where the job reads and writes: on its record, or (demo records from before) in its arguments."""
    if record.io is not None:
        return record.io
    from chronos.jobs.vehicle_stats_job import parse_args

    try:
        args = parse_args(list(record.spec.args))
    except SystemExit as exc:
        raise InvalidInput(f"job {record.job_id} has no input/output description; submit it with "
                           "`chronos job submit --file` or register it with `chronos job adopt`") from exc
    return JobIO(args.bootstrap, args.input_topic, args.output_topic)


def input_rate_over(stack_dir: Path, window_s: float, sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> Callable[[str], tuple[float, float] | None]:
    """Events/s into a job chronos knows (its record names the input topic), from the topic's end offsets
    read `window_s` apart: what the job is being sent now, unlike Flink's 60 s source meter. None for a
    job it does not know, or when the broker does not answer (status shows the rest)."""
    def rate(job_id: str) -> tuple[float, float] | None:
        record = job_records(stack_dir).get(job_id)
        if record is None:
            return None
        try:
            io = job_io(record)
            offsets = TopicEndOffsets(io.bootstrap, *io.input_topics)
        except ChronosError:
            return None
        try:
            first, start = offsets.total_end_offset(), clock()
            sleep(window_s)
            last, end = offsets.total_end_offset(), clock()
        except Exception:  # noqa: BLE001 - kafka's timeouts included: a missing reading, status shows the rest
            return None
        finally:
            offsets.close()
        return (last - first) / (end - start), round(end - start, 1)

    return rate


def reporter_urls(stack_dir: Path, override: list[str] | None = None) -> list[str]:
    """Flink's Prometheus reporter endpoints: the ones given, else the local stack's, else none."""
    if override:
        return [check_url(url, "--reporter-url") for url in override]
    state = load_state(stack_dir)
    return state.prometheus_urls if state is not None else []


def live_signals(client: FlinkRestClient, stack_dir: Path, record: JobRecord,
                 reporters: list[str] | None = None, history_s: float | None = None) -> LiveSignals:
    urls = reporters if reporters is not None else require_stack(stack_dir).prometheus_urls
    io = job_io(record)
    return LiveSignals(client, record.job_id, record.spec.name, io.bootstrap, io.input_topic, io.output_topic,
                       urls, timestamp_field=io.timestamp_field, history_s=history_s, more_input_topics=io.more_input_topics)


def live_watcher(stack_dir: Path, record: JobRecord) -> LiveWatcher:
    """The live job read all through a profile, over a REST client and signals of its own (closed with it)."""
    io = job_io(record)
    signals = LiveSignals(flink_client(stack_dir, None, patient=True), record.job_id, record.spec.name, io.bootstrap,
                          io.input_topic, io.output_topic, require_stack(stack_dir).prometheus_urls,
                          timestamp_field=io.timestamp_field, owns_client=True, more_input_topics=io.more_input_topics)
    return LiveWatcher(signals, lambda: int(time.time() * 1000))


def host_meter(stack_dir: Path) -> HostMeter:
    return HostMeter(stack_dir)


def running_job_named(stack_dir: Path, name: str) -> JobRecord | None:
    """The one running job chronos submitted here under this name (a resumed profile's live job), if any."""
    with flink_client(stack_dir, None) as client:
        running = {j.jid for j in client.jobs() if j.state == "RUNNING"}
    mine = [r for r in job_records(stack_dir).all() if r.job_id in running and r.spec.name == name]
    return mine[0] if len(mine) == 1 else None


def experiment_input(record: JobRecord, load: Load, run_id: str) -> ExperimentInput:
    io = job_io(record)
    return ExperimentInput(io.bootstrap, io.input_topic, io.output_topic, load.rate, load.vehicles, run_id)


def stack_faults(stack_dir: Path) -> dict[str, Callable[[Action], FaultInjector]]:
    return {
        "kill-taskmanager": lambda action: KillTaskManager(stack_dir),
        "pause-taskmanager": lambda action: PauseTaskManager(stack_dir, action.seconds),
        "restart-kafka": lambda action: RestartKafka(stack_dir),
        "kill-python-worker": lambda action: KillPythonWorker(stack_dir),
    }


def stack_rollbacks(stack_dir: Path) -> dict[str, Callable[[], None]]:
    def resume() -> None:
        resume_taskmanagers(stack_dir)

    return {
        "restart-taskmanagers": KillTaskManager(stack_dir).rollback,
        "resume-taskmanagers": resume,
        "restart-kafka": RestartKafka(stack_dir).rollback,
    }


def profile_store(path: Path, must_exist: bool = False) -> ProfileStore:
    if must_exist and not path.exists():
        raise InvalidInput(f"no profile database at {path}; run `chronos profile run` first")
    return ProfileStore(path)


def last_profile(store: ProfileStore, profile_id: str | None) -> tuple[str, ProfileSettings]:
    """(id, settings) of the named profile, or of the most recent one in the store."""
    profiles = store.profiles()
    if profile_id is not None:
        profiles = [p for p in profiles if p[0] == profile_id]
        if not profiles:
            raise InvalidInput(f"no profile {profile_id} in {store.path}")
    if not profiles:
        raise InvalidInput(f"no profile in {store.path} yet; run `chronos profile run` first")
    chosen = profiles[-1]
    return str(chosen[0]), ProfileSettings.from_json(chosen[3], str(chosen[0]))


def record_workload(state: StackState, record: JobRecord, window_s: float, console: Console) -> TraceRate:
    """The live job's input rate over `window_s`, read off its input topic's end offsets."""
    from chronos.jobs.topic_offsets import TopicEndOffsets
    from chronos.profiler.workload import record_trace

    topics = job_io(record).input_topics
    topic = ", ".join(topics)
    reader = TopicEndOffsets(state.bootstrap, *topics)
    try:
        with console.status(f"recording the workload of {topic} for {window_s:g} s") as status:
            trace = record_trace(reader, window_s, every_s=min(5.0, window_s),
                                 on_point=lambda t, r: status.update(f"recording {topic}: {t:.0f} s, {r:,.0f} events/s"))
    finally:
        reader.close()
    if not any(trace.rates):
        raise InvalidInput(f"the input topic {topic} carried no events during the {window_s:g} s recording; "
                           "give --trace FILE or --rate EVENTS_PER_S")
    return trace


def record_input(state: StackState, topics: tuple[str, ...], window_s: float, seed: int, console: Console) -> InputSample:
    """A sample of the live input topics' records over `window_s` (read-only, group-less) with their rate."""
    from chronos.jobs.input_recorder import TopicRecorder
    from chronos.profiler.input_sample import record_sample

    names = ", ".join(topics)
    reader = TopicRecorder(state.bootstrap, topics)
    try:
        with console.status(f"recording the input of {names} for {window_s:g} s") as status:
            return record_sample(reader, topics, window_s, every_s=min(5.0, window_s), seed=seed,
                                 on_point=lambda t, r, n: status.update(
                                     f"recording {names}: {t:.0f} s, {r:,.0f} records/s, {n:,} read"))
    finally:
        reader.close()


def recovery_probe(stack_dir: Path) -> Callable[[], str]:
    """`chronos tune --allow-fault`: one TaskManager of the local stack killed (and replaced, so the job's slots
    come back), as the chaos command's kill-taskmanager does."""
    def probe() -> str:
        record = KillTaskManager(stack_dir, replace=True).inject()
        return f"{record.kind} {record.target} ({record.detail})"
    return probe


def profiling_pool(stack_dir: Path, profile_id: str, state: StackState, slots: int) -> LocalClusterPool:
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", profile_id):
        raise InvalidInput(f"profile id {profile_id[:80]!r} cannot name a directory; profile ids are letters, "
                           "digits, '.', '_' and '-'")
    pool = LocalClusterPool(stack_dir / "profiling" / profile_id, default_cache_dir(), state.bootstrap, slots,
                            jvm_opts=state.jvm_opts, flink_settings=state.flink_settings,
                            spare_taskmanagers=state.spare_taskmanagers)  # the copies' JVMs and recovery as the live's
    pool.clean_leftovers()
    return pool


def job_control(client: FlinkRestClient, stack_dir: Path, path: str = "rest") -> RestJobControl:
    return RestJobControl(client, submitter(path, client, stack_dir), savepoint_dir(stack_dir))


def cluster_reconfigurer(client: FlinkRestClient, stack_dir: Path, journal: TuneJournal,
                         say: Callable[[str], None]) -> ClusterReconfigurer:
    """The local stack restarted with other recovery settings, its jobs through the journaled Retuner."""
    records = job_records(stack_dir)

    def replaced(old: TunedJob, new: TunedJob, savepoint: str) -> None:
        previous = records.get(old.job_id)
        record_replacement(stack_dir, previous.io if previous is not None else None)(old, new, savepoint)

    def job_of(job_id: str) -> TunedJob | None:
        record = records.get(job_id)
        return None if record is None else TunedJob(job_id, record.spec, record.settings)

    retuner = Retuner(job_control(client, stack_dir), journal, on_replaced=replaced)
    return ClusterReconfigurer(retuner, journal, LocalClusterRestarter(stack_dir, say), PlanFile(stack_dir),
                               job_of, say)


def recovery_settings_in_force(client: FlinkRestClient, stack_dir: Path,
                               rest_url: str | None = None) -> tuple[tuple[str, str], ...]:
    """The recovery settings in force on the cluster (its JobManager's configuration) and the local stack's spare
    TaskManagers (none counted on a cluster given by `rest_url`), stored with each recovery measured on it."""
    state = None if rest_url else load_state(stack_dir)
    return in_force(client.jobmanager_config(), state.spare_taskmanagers if state is not None else 0)


def recovery_proposal(client: FlinkRestClient, stack_dir: Path, rest_url: str | None, watch_s: float, *,
                      spare_allowed: bool = True, safety_factor: float = 3.0, min_timeout_s: float = 5.0,
                      conditions: RecoveryConditions | None = None,
                      progress: Callable[[float], None] = lambda _: None) -> tuple[RecoveryProposal, FlinkSettings, int]:
    """The recovery settings proposed for the cluster behind `client` from the pauses its TaskManagers show over
    `watch_s`, the Flink lines that put them in force, and how many samples it rests on (none: InvalidInput).
    On the local stack (no `rest_url`) the spare is a TaskManager and the phase model is fitted on its profiles;
    elsewhere the spare is `slotmanager.redundant-taskmanager-num` and the prior predicts."""
    state = None if rest_url else load_state(stack_dir)
    version = parse_version(client.overview().flink_version)
    config = client.jobmanager_config()
    current = recovery_settings(config, state.spare_taskmanagers if state is not None else 0)
    evidence, samples = watch_pauses(client, watch_s, current.heartbeat_interval_s, progress=progress)
    if samples == 0:
        raise InvalidInput("no TaskManager answered while measuring pauses: is a TaskManager registered?")
    model = None if rest_url else measured_phase_model(stack_dir / "profiles.db")
    proposal = propose_recovery(
        current, evidence, conditions or RecoveryConditions("kill", 0.0, 1.0, 0.0, largest_state_bytes(client)),
        spare_allowed=spare_allowed and state is not None, model=model,
        taskmanager_memory=config.get("taskmanager.memory.process.size", "a TaskManager's"),
        safety_factor=safety_factor, min_timeout_s=min_timeout_s)
    lines = settings_config(proposal.proposed, version)
    if spare_allowed and state is None:
        lines = lines.merged(FlinkSettings(version, (("slotmanager.redundant-taskmanager-num", "1"),)))
    return proposal, lines, samples


def largest_state_bytes(client: FlinkRestClient) -> float:
    """The largest state of the cluster's running jobs, by their latest completed checkpoint (0 when none has)."""
    sizes = [0.0]
    for job in client.jobs():
        if job.state == "RUNNING":
            with contextlib.suppress(ChronosError):
                latest = client.checkpoints(job.jid).latest.completed
                if latest is not None:
                    sizes.append(float(latest.state_size))
    return max(sizes)


def measured_phase_model(db: Path) -> PhaseModel | None:
    """The phase model fitted on every recovery stored in the profile store that can explain its phases
    (profiling copies and chaos runs measured with this chronos), or None when there is none."""
    if not db.exists():
        return None
    store, journal = ProfileStore(db), TuneJournal(db)
    try:
        profiled: dict[str, list[tuple[RecoveryMeasurement, float, float]]] = {}
        for profile_id, job_name, *_ in store.profiles():
            profiled.setdefault(job_name, []).extend(
                (m, run.load_rate, (run.steady.checkpoint_size_bytes or 0.0) if run.steady else 0.0)
                for run in store.runs(profile_id) for m in run.recoveries)
        live = {job: journal.recoveries(job) for job in journal.recovery_jobs()}
    finally:
        store.close()
        journal.close()
    observations = []
    for job in sorted(set(profiled) | set(live)):  # each job at its own capacity: what its catch-ups measured
        measured = profiled.get(job, [])
        capacities = [c for c in [*(m.capacity for m, _, _ in measured), *(r.capacity for r in live.get(job, []))]
                      if c is not None]
        capacity = statistics.median(capacities) if capacities else None
        observations += [o for m, rate, state in measured if (o := phase_observation(m, rate, state, capacity))]
        observations += [o for r in live.get(job, []) if (o := live_phase_observation(
            r.settings_in_force, r.interval_ms, r.rate, r.failed_ms, r.running_ms,
            None if r.recovery_s is None else r.failed_ms + round(r.recovery_s * 1000), r.catch_up_input_rate,
            capacity, r.backlog_at_restart))]
    return fit_phase_model(observations) if observations else None


def running_chronos_jobs(client: FlinkRestClient, stack_dir: Path) -> list[TunedJob]:
    """Every job not in a terminal state, as chronos knows it; one it does not know (no spec to resubmit it
    from) is refused in one line before anything is touched."""
    records = job_records(stack_dir)
    jobs = []
    for summary in client.jobs():
        if summary.state in TERMINAL_STATES:
            continue
        record = records.get(summary.jid)
        if record is None:
            raise InvalidInput(f"job {summary.jid} ({summary.name}) runs here but chronos did not submit or adopt it: "
                               "its spec is unknown, so it could not be resubmitted; adopt it (`chronos job adopt`) "
                               "or stop it first")
        jobs.append(TunedJob(summary.jid, record.spec, record.settings))
    return jobs


def record_replacement(stack_dir: Path, io: JobIO | None) -> Callable[[TunedJob, TunedJob, str], None]:
    """After a retune: the new job gets a record (spec, settings, the savepoint it came from, its io) and the
    old one says what replaced it, so `--job OLD` follows to the job running now."""
    records = job_records(stack_dir)

    def replaced(old: TunedJob, new: TunedJob, savepoint: str) -> None:
        records.save(JobRecord(new.job_id, new.spec, new.settings, restored_from=savepoint, io=io))
        previous = records.get(old.job_id)
        if previous is not None:
            records.save(replace(previous, stopped_with_savepoint=savepoint, replaced_by=new.job_id))

    return replaced


def journal(path: Path) -> TuneJournal:
    """The tuner's write-ahead journal (retunes, cadences, decisions, live recoveries) in this SQLite file."""
    return TuneJournal(path)


def checkpoint_trigger(client: FlinkRestClient) -> RestCheckpointTrigger:
    """Pacing over Flink's REST checkpoint trigger, and the probe of whether this cluster offers it."""
    return RestCheckpointTrigger(client)


def retuner(client: FlinkRestClient, stack_dir: Path, journal: TuneJournal, io: JobIO | None,
            path: str = "rest") -> Retuner:
    """The one way a job on the local stack is retuned, by `chronos tune` and `chronos job retune` alike."""
    return Retuner(job_control(client, stack_dir, path), journal, on_replaced=record_replacement(stack_dir, io))


def tune_collector(client: FlinkRestClient, stack_dir: Path, record: JobRecord, latency_window_s: float,
                   reporters: list[str] | None = None) -> KafkaJobCollector:
    from chronos.signals.latency_sources import latency_source

    io = job_io(record)
    urls = reporter_urls(stack_dir, reporters)
    # Latencies kept for the p99 window and a margin (a step that ran late), not for the tuner's lifetime.
    signals = live_signals(client, stack_dir, record, urls, history_s=latency_window_s + 120)
    latency = latency_source(io, signals, urls, record.spec.name)
    return KafkaJobCollector(signals, client, latency_window_s, latency)


def job_to_tune(client: FlinkRestClient, stack_dir: Path, job_id: str | None, journal: TuneJournal) -> JobRecord:
    """The job to tune: one a crashed tuner left mid-retune comes first; else the one named (followed
    through its replacements), or the single running job chronos submitted here."""
    store = job_records(stack_dir)
    pending = [r for r in journal.retunes() if not r.finished
               and (job_id is None or job_id in (r.old_job_id, r.new_job_id))]
    if pending:
        record = store.get(pending[-1].old_job_id)
        if record is None:
            raise InvalidInput(f"an unfinished retune of {pending[-1].old_job_id} is journaled, but its job spec "
                               f"is not in {stack_dir / 'jobs'}")
        return record
    if job_id is not None:
        record = store.get(job_id)
        seen = set()
        while record is not None and record.replaced_by and record.job_id not in seen:
            seen.add(record.job_id)
            record = store.get(record.replaced_by)
        if record is None:
            raise InvalidInput(f"job {job_id} was not submitted by chronos here: its spec is unknown, so it cannot be retuned")
        state = client.job(record.job_id).state
        if state != "RUNNING":
            raise InvalidInput(f"job {record.job_id} is {state}, not RUNNING; nothing to tune")
        return record
    return chronos_job(client, stack_dir, None)


def deployment_to_tune(client: FlinkRestClient, deployment: str, namespace: str, job_file: Path,
                       journal: TuneJournal) -> tuple[JobRecord, DeploymentRealizer]:
    """An operator-managed job: its io from the job file, its job id and interval from the
    FlinkDeployment (checked to upgrade with its state), retuned by patching the deployment."""
    from chronos.jobs.job_file import load_job_file
    from chronos.k8s.flink_deployment import CustomObjectsDeploymentApi

    spec, io = load_job_file(job_file, {}, program_required=False)
    realizer = DeploymentRealizer(CustomObjectsDeploymentApi.from_kubeconfig(), namespace, deployment, journal,
                                  interval_in_force=lambda job_id: client.checkpoint_config(job_id).interval)
    status = realizer.check()
    if status.job_id is None or status.job_state != "RUNNING":
        raise InvalidInput(f"FlinkDeployment {namespace}/{deployment} runs no job (job state "
                           f"{status.job_state or 'unknown'}); nothing to tune")
    interval = status.interval_ms or client.checkpoint_config(status.job_id).interval
    return JobRecord(status.job_id, spec, CheckpointSettings(interval), io=io), realizer


def model_book(db: Path, job_name: str, journal: TuneJournal, strategy: str = "chronos",
               fit_timeout_s: float = 300.0, latency_rising: bool = False) -> ModelBook:
    """Models from every profile of this job in the database, plus the live recoveries seen so far
    (Khaos's linear models for the Khaos-style strategy, the best held-out family otherwise); `latency_rising` for a
    job whose output commits on checkpoints."""
    from chronos.optimizer.model_values import Model, Observation, ProfileObservations
    from chronos.profiler.observations import profile_observations
    from chronos.tune.fitting import fit_in_child

    observations = ProfileObservations((), (), ())
    if db.exists():
        store = ProfileStore(db)
        try:
            runs = [run for profile in store.profiles() if profile[1] == job_name for run in store.runs(profile[0])]
        finally:
            store.close()
        observations = profile_observations(runs)
    live = [Observation(r.interval_ms / 1000, r.rate, r.recovery_s) for r in journal.recoveries(job_name)
            if r.recovery_s is not None and r.interval_ms]
    khaos = strategy == "khaos"

    def fitter(points: Sequence[Observation], seed: int, capacity: float | None, rising: bool) -> Model:
        # Khaos's OLS as published: one family, nothing set aside.
        return fit_in_child(points, seed, families=("linear",) if khaos else None, timeout_s=fit_timeout_s,
                            capacity=capacity, rising=rising and not khaos)

    latencies = [Observation(w.interval_ms / 1000, w.rate, w.p99_ms) for w in journal.latencies(job_name)]
    return ModelBook(observations, live, fitter=fitter, learn_online=not khaos, latency_rising=latency_rising,
                     live_latencies=latencies)


def journaled_cadence(db: Path) -> Callable[[str, str], int | None]:
    """The cadence the newest journaled cadence change of a job holds it at, if it is this job's (a job replaced
    since is not paced until a tuner says so); read-only, and nothing if there is no journal yet."""
    def paced_at(job_id: str, name: str) -> int | None:
        if not db.exists():
            return None
        journal = TuneJournal(db)
        try:
            held = journal.cadences(name)
        finally:
            journal.close()
        return held[-1].to_ms if held and held[-1].job_id == job_id else None
    return paced_at
