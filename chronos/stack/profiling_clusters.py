"""Profiling clusters on this machine: one small Flink session cluster per profiling run, each a
stack of its own (own ports, directories, PIDs) that shares the live stack's Kafka broker.

A run's faults kill its own TaskManager only; a copy of the job on the live job's cluster could not be
broken without breaking the live job. Each cluster is a stack directory under the profile's, so
`chronos stack down --stack-dir` stops a leftover one like any other.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import ChronosError, StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.parallel_load import LoadPlan, run_parallel_load
from chronos.jobs.replay_load import ReplayPlan, run_replay
from chronos.jobs.topics import delete_topics, ensure_topics
from chronos.model import CheckpointSettings, JobSpec
from chronos.optimizer.recovery_config import in_force
from chronos.profiler.copies import JobCopy
from chronos.profiler.input_sample import InputSample
from chronos.profiler.records import RecoveryVariant
from chronos.rates import RateProfile
from chronos.signals.live import LiveSignals
from chronos.stack.cluster_leases import ClusterLeases, Lease
from chronos.stack.faults import KillTaskManager
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.processes import cpu_seconds
from chronos.stack.stack_credentials import StackCredentials
from chronos.stack.state import StackState, load_state
from chronos.tune.journal import Cadence
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.pacer import Outcome, Pacer

# The OS priority a profiling cluster's processes (Flink, the Python UDF workers, the copy's load) run at: on a
# host shared with the live job, a copy takes the CPU the live job leaves. With Linux's CFS a nice-10 process weighs
# 110 against a nice-0 one's 1024, so when both want a core the live job gets ~90 % of it (two copies at nice 0 beside
# the live job on two cores raised its p99 by 12 %).
COPY_NICENESS = 10

# Process sizes of a profiling cluster (JobManager 1 GiB + TaskManager 1.5 GiB, as `stack up` starts
# them) plus the copy's load generator and its share of the broker.
GIB_PER_CLUSTER = 3.0


def available_memory_gib() -> float:
    return float(psutil.virtual_memory().available) / 1024**3


def check_capacity(parallel: int, available_gib: float, extra_taskmanagers: int = 0) -> None:
    """Refuse, in one line, more parallel clusters than the memory of this machine holds (`extra_taskmanagers`:
    spare TaskManagers a cluster may start besides its own, 1.5 GiB each)."""
    per_cluster = GIB_PER_CLUSTER + 1.5 * extra_taskmanagers
    need = parallel * per_cluster
    if parallel < 1:
        raise StackError(f"--parallel must be at least 1, got {parallel}")
    if need > available_gib:
        most = int(available_gib // per_cluster)
        raise StackError(f"no room for {parallel} profiling clusters: they need ~{need:.0f} GiB, "
                         f"{available_gib:.1f} GiB is available (at most --parallel {most})")


@dataclass(frozen=True)
class LocalProfilingCluster:
    stack_dir: Path
    shared_bootstrap: str  # the live stack's broker: the copy's topics live there, and outlive this cluster
    # How its clients log in to that broker: held here, not read from the cluster's state, because the copy's topics
    # are deleted after the cluster is gone.
    kafka: KafkaSecurity = PLAINTEXT

    def _state(self) -> StackState:
        state = load_state(self.stack_dir)
        if state is None:
            raise StackError(f"profiling cluster {self.stack_dir} is gone")
        return state

    @property
    def rest_url(self) -> str:
        return self._state().rest_url

    @property
    def bootstrap(self) -> str:
        return self.shared_bootstrap

    @property
    def reporter_urls(self) -> list[str]:
        return self._state().prometheus_urls

    def fault(self) -> KillTaskManager:
        return KillTaskManager(self.stack_dir)

    def recovery_settings(self) -> tuple[tuple[str, str], ...]:
        state = load_state(self.stack_dir)
        if state is None:
            return ()
        try:
            with FlinkRestClient.patient(state.rest_url, security=state.rest_client) as client:
                return in_force(client.jobmanager_config(), state.spare_taskmanagers)
        except ChronosError:  # unreadable: what chronos laid over the cluster's own config, at least
            return in_force(dict(state.flink_settings), state.spare_taskmanagers)

    def taskmanager_cpu_seconds(self) -> float | None:
        """CPU seconds of the live TaskManagers (after a fault: the replacement's, from its start)."""
        readings = [cpu_seconds(record) for record in self._state().taskmanagers]
        known = [r for r in readings if r is not None]
        return sum(known) if known else None

    # -- what a profiling run touches on its cluster (the ports of chronos.profiler.run.ProfilingCluster) ---------
    def control(self) -> CopyControl:
        state = self._state()
        return CopyControl(FlinkRestClient.patient(state.rest_url, security=state.rest_client))

    def signals(self, job_id: str, copy: JobCopy, timestamp_field: str = "max_created_ms") -> LiveSignals:
        state = self._state()
        client = FlinkRestClient.patient(state.rest_url, security=state.rest_client)
        return LiveSignals(client, job_id, copy.spec.name, self.bootstrap, copy.input_topic, copy.output_topic,
                           state.prometheus_urls, owns_client=True, timestamp_field=timestamp_field,
                           more_input_topics=tuple(t for t in copy.input_topics if t != copy.input_topic),
                           kafka=self.kafka)

    def create_topics(self, topics: list[str], partitions: int) -> None:
        ensure_topics(self.bootstrap, topics, partitions=partitions, security=self.kafka)

    def delete_topics(self, topics: list[str]) -> None:
        delete_topics(self.bootstrap, topics, security=self.kafka)

    def start_load(self, topic: str, rate: RateProfile, vehicles: int, run_id: str, workers: int) -> BackgroundLoad:
        state = self._state()
        plan = LoadPlan(self.bootstrap, topic, rate, vehicles=vehicles, run_id=run_id, duration_s=24 * 3600,
                        workers=workers, niceness=state.niceness, security=self.kafka)
        return BackgroundLoad(plan)


    def start_replay(self, sample: InputSample, topics: tuple[tuple[str, str], ...], rate: RateProfile,
                     event_time_fields: tuple[str, ...], workers: int) -> BackgroundReplay:
        state = self._state()
        return BackgroundReplay(ReplayPlan(self.bootstrap, sample, topics, rate, event_time_fields, workers=workers,
                                           niceness=state.niceness, security=self.kafka))


class BackgroundReplay:
    """The copy's replayed input, in a thread of the profiling process (its producers are processes)."""

    def __init__(self, plan: ReplayPlan) -> None:
        self._stop = threading.Event()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, args=(plan,), daemon=True)
        self._thread.start()

    def _run(self, plan: ReplayPlan) -> None:
        try:
            run_replay(plan, self._stop)
        except ChronosError as exc:  # the copy then shows no input: the run's measurements say so
            self.error = str(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class CopyControl:
    """The copy's job on its own cluster, over that cluster's REST API; its checkpoints paced by the tuner's own
    pacer (chronos.tune.pacer) in a thread, with a journal in memory: a copy's cadence need not survive it."""

    def __init__(self, client: FlinkRestClient) -> None:
        self._client = client
        self._pacer: Pacer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def submit(self, spec: JobSpec, settings: CheckpointSettings) -> str:
        return RestSubmitter(self._client, find_distribution().python_jar).submit(spec, settings)

    def wait_until_running(self, job_id: str, timeout_s: float) -> None:
        self._client.wait_until_running(job_id, timeout_s=timeout_s)

    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int) -> None:
        if self._pacer is None:
            self._pacer = Pacer(RestCheckpointTrigger(self._client), MemoryJournal(), _QuietPacing(), "profiling copy")
            self._thread = threading.Thread(target=self._pacer.run, args=(self._stop,), daemon=True,
                                            name="copy pacer")
            self._thread.start()
        self._pacer.pace(job_id, cadence_ms, fallback_ms, "profiling run")

    def cancel(self, job_id: str) -> None:
        self._client.cancel(job_id)

    def close(self) -> None:
        self._stop.set()
        if self._pacer is not None and self._thread is not None:
            self._pacer.wake()
            self._thread.join(30)
        self._client.close()


class _QuietPacing:
    """A copy's pacing reports nothing: its checkpoints are read from Flink's history with the run's measurements."""

    def triggered(self, job_name: str, outcome: Outcome) -> None:
        return None

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        return None

    def cadence(self, job_name: str, entry: Cadence) -> None:
        return None

    def message(self, text: str) -> None:
        return None


class BackgroundLoad:
    """The copy's load generator, in a thread of the profiling process (its workers are processes)."""

    def __init__(self, plan: LoadPlan) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=run_parallel_load, args=(plan,),
                                        kwargs={"should_stop": self._stop.is_set}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class LocalClusterPool:
    """Starts a cluster per run under `base_dir`; one start at a time, so two runs starting together
    cannot pick the same free port. With `leases`, each cluster first takes one of the host's profiling-cluster
    leases (`chronos.stack.cluster_leases`), held until it is released: the bound across every profile of the stack.
    `waiting` hears a run that queues for one; `interrupted` ends the wait (a stop asked meanwhile)."""

    def __init__(self, base_dir: Path, cache_dir: Path, shared_bootstrap: str, slots: int, jvm_opts: str = "",
                 flink_settings: tuple[tuple[str, str], ...] = (), spare_taskmanagers: int = 0,
                 niceness: int = COPY_NICENESS, leases: ClusterLeases | None = None,
                 credentials: StackCredentials | None = None) -> None:
        """`credentials`: a secured live stack's (its broker's logins, its CA for the copies' REST over TLS)."""
        self._credentials = credentials
        self._base, self._cache, self._bootstrap, self._slots = base_dir, cache_dir, shared_bootstrap, slots
        self.niceness = niceness
        self._jvm_opts = jvm_opts
        # The live cluster's recovery settings and spare TaskManagers: a copy that detected and rescheduled a
        # failure otherwise than the live job would profile another recovery than the one being tuned.
        self._flink_settings, self._spare = flink_settings, spare_taskmanagers
        self._lock = threading.Lock()
        self._leases = leases
        self._held: dict[Path, Lease] = {}
        self.waiting: Callable[[str], None] = lambda _: None
        self.interrupted: Callable[[], bool] = lambda: False

    def acquire(self, run_id: str, recovery: RecoveryVariant | None = None) -> LocalProfilingCluster:
        """`recovery`: settings explored over the live cluster's (its lines win, its spare count replaces)."""
        stack_dir = self._base / run_id
        settings, spare = self._flink_settings, self._spare
        if recovery is not None:
            settings = tuple({**dict(settings), **dict(recovery.flink_settings)}.items())
            spare = recovery.spare_taskmanagers
        lease = None if self._leases is None else \
            self._leases.acquire(f"run {run_id}", self.waiting, self.interrupted)
        with self._lock:
            try:
                up(StackOptions(stack_dir, self._cache, slots=self._slots, shared_bootstrap=self._bootstrap,
                                jvm_opts=self._jvm_opts, flink_settings=settings, spare_taskmanagers=spare,
                                niceness=self.niceness, credentials=self._credentials))
            except BaseException:
                down(stack_dir, purge=True)
                shutil.rmtree(stack_dir, ignore_errors=True)
                if lease is not None:
                    lease.release()
                raise
            if lease is not None:
                self._held[stack_dir] = lease
        kafka = PLAINTEXT if self._credentials is None else self._credentials.kafka_client()
        return LocalProfilingCluster(stack_dir, self._bootstrap, kafka)

    def release(self, cluster: object) -> None:
        if isinstance(cluster, LocalProfilingCluster):
            try:
                down(cluster.stack_dir, purge=True)
                shutil.rmtree(cluster.stack_dir, ignore_errors=True)
            finally:
                with self._lock:
                    lease = self._held.pop(cluster.stack_dir, None)
                if lease is not None:
                    lease.release()

    def leftovers(self) -> list[Path]:
        """Cluster directories of runs that were interrupted (their stacks may still be up)."""
        return sorted(p for p in self._base.glob("*") if (p / "stack.json").exists()) if self._base.exists() else []

    def clean_leftovers(self) -> list[Path]:
        found = self.leftovers()
        for stack_dir in found:
            down(stack_dir, purge=True)
            shutil.rmtree(stack_dir, ignore_errors=True)
        return found
