"""The one place where real adapters are built from the stack state and command-line overrides."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from chronos.chaos.faults import FaultInjector
from chronos.cli import connections
from chronos.connection_security import NO_REST_SECURITY, PLAINTEXT, KafkaSecurity, RestSecurity
from chronos.errors import InvalidInput, StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestCheckpointTrigger, RestJobControl
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import CliSubmitter, JobSubmitter, RestSubmitter
from chronos.k8s.flink_deployment import DeploymentRealizer
from chronos.model import (
    CheckpointSettings,
    JobIO,
    JobSpec,
    check_bootstrap,
    check_url,
)
from chronos.profiler.store import ProfileStore
from chronos.stack.faults import KillPythonWorker, KillTaskManager, PauseTaskManager, RestartKafka, resume_taskmanagers
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.stack.known_jobs import job_io
from chronos.stack.locations import default_cache_dir
from chronos.stack.service_account import ReadableFirst, account_of
from chronos.stack.stack_credentials import credentials_of
from chronos.stack.state import StackState, load_state
from chronos.tune.cluster_reconfigure import ClusterReconfigurer
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob

# Every command imports this module and most need few of its adapters: the ones that pull in numpy, the Kafka and
# kubernetes clients or the chaos and profiling engines are imported where they are built: imported at the top, they
# took longer to load than the rest of the CLI, on every command.
if TYPE_CHECKING:
    from chronos.chaos.experiment import Action, Load
    from chronos.flink.replies import CheckpointConfigReply, JobDetail
    from chronos.jobs.bounded_input import ExperimentInput
    from chronos.jobs.input_recorder import TopicRecorder
    from chronos.jobs.loadgen import KafkaEventSink
    from chronos.jobs.topic_offsets import TopicEndOffsets
    from chronos.k8s.flink_deployment import DeploymentApi, KubeDeploymentApi
    from chronos.optimizer.detection import PauseEvidence
    from chronos.optimizer.phase_model import PhaseModel, RecoveryConditions
    from chronos.profiler.live_watcher import LiveWatcher
    from chronos.signals.live import LiveSignals
    from chronos.signals.shared_reads import SharedReads
    from chronos.signals.tune_signals import KafkaJobCollector
    from chronos.stack.host_load import HostMeter
    from chronos.stack.profiling_clusters import LocalClusterPool
    from chronos.tune.fitting import FitSlots, ModelBook
    from chronos.tune.recovery_advice import Proposed

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


def rest_security(stack_dir: Path, override: str | None) -> RestSecurity:
    """How the REST client proves itself: to a --rest-url, as the --rest-* options say; to the stack's own, as its
    state says (a secured stack's client certificate)."""
    if override:
        return connections.rest_security(os.environ) or NO_REST_SECURITY
    return require_stack(stack_dir).rest_client


def kafka_security(stack_dir: Path, servers: str) -> KafkaSecurity:
    """How chronos's Kafka clients log in to `servers` when no job file says: as --kafka-security says, else as the
    stack's own clients do if it is the stack's broker, else anonymously in plaintext."""
    given = connections.kafka_security(os.environ)
    if given is not None:
        return given
    state = load_state(stack_dir)
    return state.kafka_client if state is not None and state.bootstrap == servers else PLAINTEXT


def flink_client(stack_dir: Path, override: str | None, patient: bool = False) -> FlinkRestClient:
    """The cluster's REST client; `patient` for a long-running part (chronos.flink.rest says why)."""
    url = rest_url(stack_dir, override)
    secured = rest_security(stack_dir, override)
    return FlinkRestClient.patient(url, security=secured) if patient else FlinkRestClient(url, security=secured)


def submitter(path: str, client: FlinkRestClient, stack_dir: Path) -> JobSubmitter:
    state = load_state(stack_dir)
    inner: JobSubmitter
    if path == "cli":
        state = require_stack(stack_dir)
        home = state.flink_home
        inner = CliSubmitter(find_distribution(), client.base_url, home / "conf", home / "log", home / "lib",
                             account_of(Path(state.services_dir)).run_as())
    else:  # the distribution looked for at a PyFlink program's first submission (a jar job needs none)
        inner = RestSubmitter(client, lambda: find_distribution().python_jar)
    if state is None or state.service_user is None:
        return inner
    return ReadableFirst(inner, account_of(Path(state.services_dir)))


def job_records(stack_dir: Path) -> JobRecordStore:
    return JobRecordStore(stack_dir / "jobs")


def savepoint_dir(stack_dir: Path) -> Path:
    return require_stack(stack_dir).savepoint_dir


def reporter_urls(stack_dir: Path, override: list[str] | None = None) -> list[str]:
    """Flink's Prometheus reporter endpoints: the ones given, else the local stack's, else none."""
    if override:
        return [check_url(url, "--reporter-url") for url in override]
    state = load_state(stack_dir)
    return state.prometheus_urls if state is not None else []


def live_signals(client: FlinkRestClient, stack_dir: Path, record: JobRecord,
                 reporters: list[str] | None = None, history_s: float | None = None,
                 reads: SharedReads | None = None) -> LiveSignals:
    """`reads`: the reporter scrape and broker end offsets shared with the other jobs of one controller."""
    from chronos.signals.live import LiveSignals

    urls = reporters if reporters is not None else require_stack(stack_dir).prometheus_urls
    io = job_io(record)
    ends = None if reads is None else reads.end_offsets(io.bootstrap, (io.input_topic, *io.more_input_topics), io.kafka)
    return LiveSignals(client, record.job_id, record.spec.name, io.bootstrap, io.input_topic, io.output_topic,
                       urls, timestamp_field=io.timestamp_field, history_s=history_s, more_input_topics=io.more_input_topics,
                       ends=ends, scrape_reporter=None if reads is None else reads.scrape, kafka=io.kafka)


def live_watcher(stack_dir: Path, record: JobRecord) -> LiveWatcher:
    """The live job read all through a profile, over a REST client and signals of its own (closed with it)."""
    from chronos.profiler.live_watcher import LiveWatcher
    from chronos.signals.live import LiveSignals

    io = job_io(record)
    signals = LiveSignals(flink_client(stack_dir, None, patient=True), record.job_id, record.spec.name, io.bootstrap,
                          io.input_topic, io.output_topic, require_stack(stack_dir).prometheus_urls,
                          timestamp_field=io.timestamp_field, owns_client=True, more_input_topics=io.more_input_topics,
                          kafka=io.kafka)
    return LiveWatcher(signals, lambda: int(time.time() * 1000))


def host_meter(stack_dir: Path) -> HostMeter:
    from chronos.stack.host_load import HostMeter

    return HostMeter(stack_dir)


def experiment_input(record: JobRecord, load: Load, run_id: str) -> ExperimentInput:
    from chronos.jobs.bounded_input import ExperimentInput

    io = job_io(record)
    return ExperimentInput(io.bootstrap, io.input_topic, io.output_topic, load.rate, load.vehicles, run_id,
                           security=io.kafka)


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


def recovery_probe(stack_dir: Path) -> Callable[[], str]:
    """`chronos tune --allow-fault`: one TaskManager of the local stack killed (and replaced, so the job's slots
    come back), as the chaos command's kill-taskmanager does."""
    def probe() -> str:
        record = KillTaskManager(stack_dir, replace=True).inject()
        return f"{record.kind} {record.target} ({record.detail})"
    return probe


def profiling_pool(stack_dir: Path, profile_id: str, state: StackState, slots: int,
                   clusters_at_once: int | None = None) -> LocalClusterPool:
    """`clusters_at_once`: the profiling clusters the host runs at once across every profile of the stack (the
    leases in <stack>/profiling/.leases); None: no bound beyond the profile's own runs at a time."""
    from chronos.stack.cluster_leases import ClusterLeases
    from chronos.stack.profiling_clusters import LocalClusterPool

    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", profile_id):
        raise InvalidInput(f"profile id {profile_id[:80]!r} cannot name a directory; profile ids are letters, "
                           "digits, '.', '_' and '-'")
    pool = LocalClusterPool(stack_dir / "profiling" / profile_id, default_cache_dir(), state.bootstrap, slots,
                            credentials=credentials_of(Path(state.services_dir)) if state.kafka_security else None,
                            jvm_opts=state.jvm_opts, flink_settings=state.flink_settings,
                            spare_taskmanagers=state.spare_taskmanagers,  # the copies' JVMs and recovery as the live's
                            leases=None if clusters_at_once is None else
                            ClusterLeases(stack_dir / "profiling" / ".leases", clusters_at_once))  # no profile id starts with .
    pool.clean_leftovers()
    return pool


def job_control(client: FlinkRestClient, stack_dir: Path, path: str = "rest") -> RestJobControl:
    return RestJobControl(client, submitter(path, client, stack_dir), savepoint_dir(stack_dir))


def cluster_reconfigurer(client: FlinkRestClient, stack_dir: Path, journal: TuneJournal,
                         say: Callable[[str], None]) -> ClusterReconfigurer:
    """The local stack restarted with other recovery settings, its jobs through the journaled Retuner."""
    from chronos.stack.cluster_restart import LocalClusterRestarter, PlanFile

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
    from chronos.optimizer.recovery_config import in_force

    state = None if rest_url else load_state(stack_dir)
    return in_force(client.jobmanager_config(), state.spare_taskmanagers if state is not None else 0)


def recovery_proposal(client: FlinkRestClient, stack_dir: Path, rest_url: str | None, watch_s: float, *,
                      spare_allowed: bool = True, safety_factor: float = 3.0, min_timeout_s: float = 5.0,
                      conditions: RecoveryConditions | None = None,
                      progress: Callable[[float], None] = lambda _: None) -> Proposed:
    """`chronos.tune.recovery_advice.propose_for_cluster` over the cluster behind `client`: on the local stack (no
    `rest_url`) the spare is a TaskManager and the phase model is fitted on its profiles; elsewhere the spare is
    `slotmanager.redundant-taskmanager-num` and the prior predicts."""
    from chronos.flink.cluster_facts import RestClusterFacts
    from chronos.signals.taskmanager_pauses import watch_pauses
    from chronos.tune.recovery_advice import propose_for_cluster

    state = None if rest_url else load_state(stack_dir)

    def watch(seconds: float, heartbeat_interval_s: float,
              progress: Callable[[float], None]) -> tuple[PauseEvidence, int]:
        return watch_pauses(client, seconds, heartbeat_interval_s, progress=progress)

    return propose_for_cluster(
        RestClusterFacts(client), watch, watch_s, spare_taskmanagers=None if state is None else state.spare_taskmanagers,
        model=None if rest_url else measured_phase_model(stack_dir / "profiles.db"), spare_allowed=spare_allowed,
        safety_factor=safety_factor, min_timeout_s=min_timeout_s, conditions=conditions, progress=progress)


def measured_phase_model(db: Path) -> PhaseModel | None:
    """The phase model of every recovery stored in this database (profiles and live jobs'), None when none is."""
    from chronos.profiler.observations import profiled_recoveries
    from chronos.tune.recovery_advice import measured_phase_model as fit_measured_phases

    if not db.exists():
        return None
    store, journal = ProfileStore(db), TuneJournal(db)
    try:
        return fit_measured_phases(profiled_recoveries(store),
                                   {job: journal.recoveries(job) for job in journal.recovery_jobs()})
    finally:
        store.close()
        journal.close()


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
                   reporters: list[str] | None = None,
                   cadence_ms: Callable[[], int | None] = lambda: None,
                   reads: SharedReads | None = None) -> KafkaJobCollector:
    from chronos.signals.latency_sources import latency_source
    from chronos.signals.tune_signals import KafkaJobCollector

    io = job_io(record)
    urls = reporter_urls(stack_dir, reporters)
    # Latencies kept for the p99 window and a margin (a step that ran late), not for the tuner's lifetime.
    signals = live_signals(client, stack_dir, record, urls, history_s=latency_window_s + 120, reads=reads)
    latency = latency_source(io, signals, urls, record.spec.name)
    return KafkaJobCollector(signals, client, latency_window_s, latency, cadence_ms=cadence_ms)


def flink_metrics_collector(client: FlinkRestClient, stack_dir: Path, record: JobRecord, latency_window_s: float,
                            latency_wanted: bool, reporters: list[str] | None = None,
                            cadence_ms: Callable[[], int | None] = lambda: None,
                            job_file_hint: str | None = None, reads: SharedReads | None = None) -> KafkaJobCollector:
    """The collector of a job chronos has no job file of: its rate, lag and throughput from Flink's reporter, or
    its REST API where no reporter is known (`chronos.signals.flink_metrics`); its latency from Flink's latency
    markers, the one source it has of its own, and only when a latency target asks for it (refused in one line when
    the job reports none). `job_file_hint`: how to give the job a job file, said with a refusal (default: `chronos
    job adopt`)."""
    from chronos.flink.prometheus_scrape import LATENCY_METRIC, marker_latency_p99_ms, scrape
    from chronos.signals.flink_metrics import FlinkMetricSignals, NoLatency, rest_source_samples
    from chronos.signals.latency_sources import FlinkLatencyMarkers, LatencySource
    from chronos.signals.tune_signals import KafkaJobCollector
    from chronos.tune.no_program import ADOPT_HINT

    adopt = job_file_hint or f"`{ADOPT_HINT.format(job_id=record.job_id)}`"
    urls = reporter_urls(stack_dir, reporters)
    latency: LatencySource = NoLatency()
    if latency_wanted:
        if not urls or marker_latency_p99_ms(scrape(urls, names=(LATENCY_METRIC + "{",)), record.spec.name) is None:
            raise InvalidInput(f"--latency-p99: the latency of job {record.job_id} cannot be read: chronos knows no output "
                               "topic of it (no job file) and it reports no latency markers (metrics.latency.interval) "
                               + ("on its Prometheus reporter; " if urls else "on a Prometheus reporter chronos knows "
                                  "(--reporter-url); ")
                               + "tune it for recovery alone (without --latency-p99), or give it a job file naming its "
                               f"output ({adopt})")
        latency = FlinkLatencyMarkers(urls, record.spec.name)
    # The reporter where one is known (its values stay live); else the same metrics through the REST API.
    signals = FlinkMetricSignals(client, record.job_id, record.spec.name, urls, read_samples=(
        lambda: rest_source_samples(client, signals.job_id, record.spec.name)) if not urls else
        None if reads is None else (lambda: reads.scrape(urls)))
    return KafkaJobCollector(signals, client, latency_window_s, latency, cadence_ms=cadence_ms)


class JobReads(Protocol):
    """What `deployment_to_tune` reads of the job (FlinkRestClient)."""

    def job(self, job_id: str) -> JobDetail: ...
    def checkpoint_config(self, job_id: str) -> CheckpointConfigReply: ...


def deployment_to_tune(client: JobReads, deployment: str, namespace: str, job_file: Path | None,
                       journal: TuneJournal, api: DeploymentApi | None = None) -> tuple[JobRecord, DeploymentRealizer]:
    """An operator-managed job: its job id and interval from the FlinkDeployment (checked to upgrade with its
    state), retuned by patching the deployment (the operator owns its spec: no program is needed here). Its io from
    the job file; without one the record has none (no io: topics unknown, read from Flink's metrics), and its
    name is the one Flink runs it under."""
    from chronos.jobs.job_file import load_job_file

    given = connections.kafka_security(os.environ)  # --kafka-security / the chart's secured-broker settings
    loaded = load_job_file(job_file, {}, program_required=False, kafka=given or PLAINTEXT) \
        if job_file is not None else None
    realizer = DeploymentRealizer(api or deployment_api(), namespace, deployment, journal,
                                  interval_in_force=lambda job_id: client.checkpoint_config(job_id).interval)
    status = realizer.check()
    if status.job_id is None or status.job_state != "RUNNING":
        raise InvalidInput(f"FlinkDeployment {namespace}/{deployment} runs no job (job state "
                           f"{status.job_state or 'unknown'}); nothing to tune")
    interval = status.interval_ms or client.checkpoint_config(status.job_id).interval
    spec, io = loaded if loaded is not None else (JobSpec(name=client.job(status.job_id).name), None)
    return JobRecord(status.job_id, spec, CheckpointSettings(interval), io=io), realizer


def model_book(db: Path, job_name: str, journal: TuneJournal, strategy: str = "chronos",
               fit_timeout_s: float = 300.0, latency_rising: bool = False, slots: FitSlots | None = None) -> ModelBook:
    """The job's models (`chronos.tune.fitting.job_model_book`) from every profile of it in this database."""
    from chronos.optimizer.model_values import ProfileObservations
    from chronos.profiler.observations import job_observations
    from chronos.tune.fitting import job_model_book

    profile = ProfileObservations((), (), ())
    if db.exists():
        store = ProfileStore(db)
        try:
            profile = job_observations(store, job_name)
        finally:
            store.close()
    return job_model_book(profile, journal, job_name, strategy, fit_timeout_s, latency_rising, slots)


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


def topic_end_offsets(bootstrap: str, topics: tuple[str, ...], kafka: KafkaSecurity) -> TopicEndOffsets:
    """The topics' end offsets (a group-less reader): the workload's rate while it is recorded."""
    from chronos.jobs.topic_offsets import TopicEndOffsets

    return TopicEndOffsets(bootstrap, *topics, security=kafka)


def topic_recorder(bootstrap: str, topics: tuple[str, ...], kafka: KafkaSecurity) -> TopicRecorder:
    """The topics' records read (read-only, group-less) into a sample of the live input."""
    from chronos.jobs.input_recorder import TopicRecorder

    return TopicRecorder(bootstrap, topics, security=kafka)


def event_sink(bootstrap: str, topic: str, kafka: KafkaSecurity) -> KafkaEventSink:
    """The demo fleet's events produced to this topic (`chronos load run` with one worker)."""
    from chronos.jobs.loadgen import KafkaEventSink

    return KafkaEventSink(bootstrap, topic, kafka)


def deployment_api() -> KubeDeploymentApi:
    """FlinkDeployments through the kubernetes client, configured as kubectl is."""
    from chronos.k8s.flink_deployment import KubeDeploymentApi

    return KubeDeploymentApi.from_kubeconfig()
