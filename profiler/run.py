"""One profiling run: a copy of the job on a cluster of its own, fed the recorded workload at one
load level, checkpointing at one interval, measured in steady state and then through K worst-case
faults. Whatever happens, the copy, its load, its topics and its cluster are gone when it returns.

The cluster comes from a ClusterPool (a local Flink cluster sharing the live stack's broker today;
Kubernetes later), so faults break only the copy: a TaskManager kill on the live job's own cluster
would break the live job too.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from chronos.chaos.faults import FaultInjector
from chronos.chaos.measure import measure_recovery
from chronos.chaos.timing import WorstCase
from chronos.clock import wall_ms
from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.copies import profiling_copy
from chronos.jobs.parallel_load import LoadPlan, run_parallel_load
from chronos.jobs.rates import ScaledRate, TraceRate
from chronos.jobs.topics import delete_topics, ensure_topics
from chronos.model import CheckpointSettings, JobSpec, RecoveryMeasurement, SignalSample
from chronos.profiler.records import ProfileRun, RunConfig
from chronos.profiler.steady import summarise_steady
from chronos.signals.live import LiveSignals


class ProfilingCluster(Protocol):
    @property
    def rest_url(self) -> str: ...
    @property
    def bootstrap(self) -> str: ...
    @property
    def reporter_urls(self) -> list[str]: ...
    def fault(self) -> FaultInjector: ...
    def taskmanager_cpu_seconds(self) -> float | None: ...


class ClusterPool(Protocol):
    def acquire(self, run_id: str) -> ProfilingCluster: ...
    def release(self, cluster: ProfilingCluster) -> None: ...


class RunInterrupted(Exception):
    """The profile is being stopped: the run ends early and is not recorded as done."""


@dataclass(frozen=True)
class RunPlan:
    """What every run of one profile shares."""

    profile_id: str
    spec: JobSpec
    workload: TraceRate
    faults: int = 1
    partitions: int = 2
    before_s: float = 1.0
    steady_s: float = 30.0
    warmup_s: float = 15.0
    hold_s: float = 15.0
    timeout_s: float = 180.0
    vehicles: int = 1000

    def estimate_s(self, interval_s: float) -> float:
        """A run's wall time, roughly: start, two checkpoints, steady window, and per fault its
        warm-up, the wait for the worst moment, ~60 s to recover and the hold."""
        return 40 + 2 * interval_s + self.steady_s + self.faults * (self.warmup_s + interval_s + 60 + self.hold_s)


def execute_run(
    plan: RunPlan,
    trial_number: int,
    config: RunConfig,
    pool: ClusterPool,
    *,
    stop: threading.Event,
    on_phase: Callable[[str], None] = lambda phase: None,
    wall_ms: Callable[[], int] = wall_ms,
) -> ProfileRun:
    run_id = f"t{trial_number}-{uuid.uuid4().hex[:8]}"  # names the copy's topics, group and cluster directory
    started = wall_ms()
    rate = sum(plan.workload.rates) / len(plan.workload.rates) * config.load_scale

    def check() -> None:
        if stop.is_set():
            raise RunInterrupted(run_id)

    def sleep(seconds: float) -> None:
        check()
        time.sleep(seconds)

    def failed(error: str) -> ProfileRun:
        return ProfileRun(run_id, plan.profile_id, trial_number, config, rate, "failed", started, wall_ms(), error=error)

    on_phase("starting a cluster")
    try:
        cluster = pool.acquire(run_id)
    except Exception as exc:  # noqa: BLE001 - a run that cannot start is a failed run, not a failed profile
        return failed(f"cluster: {exc}")
    bootstrap = cluster.bootstrap  # read now: a released cluster's state is gone with it
    copy = profiling_copy(plan.spec, run_id, bootstrap)
    load_stop = threading.Event()
    load_thread: threading.Thread | None = None
    client = FlinkRestClient(cluster.rest_url)
    samples: list[SignalSample] = []
    try:
        check()
        ensure_topics(cluster.bootstrap, [copy.input_topic, copy.output_topic], partitions=plan.partitions)
        load = LoadPlan(cluster.bootstrap, copy.input_topic, ScaledRate(plan.workload, config.load_scale),
                        vehicles=plan.vehicles, run_id=run_id, duration_s=24 * 3600,
                        workers=2 if rate > 6000 else 1)
        load_thread = threading.Thread(target=run_parallel_load, args=(load,),
                                       kwargs={"should_stop": load_stop.is_set}, daemon=True)
        load_thread.start()
        on_phase(f"submitting (interval {config.interval_ms / 1000:g} s, {rate:,.0f} ev/s)")
        job_id = RestSubmitter(client, find_distribution().python_jar).submit(copy.spec, CheckpointSettings(config.interval_ms))
        client.wait_until_running(job_id, timeout_s=120)
        check()
        signals = LiveSignals(client, job_id, copy.spec.name, cluster.bootstrap, copy.input_topic,
                              copy.output_topic, cluster.reporter_urls)
        try:
            on_phase("waiting for two checkpoints")
            deadline = time.monotonic() + 2 * config.interval_ms / 1000 + 60
            while len(signals.checkpoint_history().completed) < 2 and time.monotonic() < deadline:
                sleep(1)
            on_phase("steady state")
            window_start, cpu_start = wall_ms(), cluster.taskmanager_cpu_seconds()
            while wall_ms() - window_start < plan.steady_s * 1000:
                samples.append(signals.sample())
                sleep(0.5)
            window_end, cpu_end = wall_ms(), cluster.taskmanager_cpu_seconds()
            cpu = cpu_end - cpu_start if cpu_start is not None and cpu_end is not None else None
            checkpoints = [c for c in signals.checkpoint_history().completed if window_start <= c.trigger_ms < window_end]
            steady = summarise_steady(samples, signals.latencies_between(window_start, window_end), checkpoints, cpu,
                                      (window_end - window_start) / 1000)
            recoveries: list[RecoveryMeasurement] = []
            for k in range(plan.faults):
                on_phase(f"fault {k + 1}/{plan.faults}")
                recoveries.append(measure_recovery(
                    signals, cluster.fault(), WorstCase(plan.before_s), warmup_s=plan.warmup_s, hold_s=plan.hold_s,
                    timeout_s=plan.timeout_s, sleep=sleep, on_sample=samples.append,
                ))
        finally:
            signals.close()
        client.cancel(job_id)
        return ProfileRun(run_id, plan.profile_id, trial_number, config, rate, "completed", started, wall_ms(),
                          steady, tuple(recoveries), tuple(samples))
    except RunInterrupted:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded with the run; the profile goes on
        return failed(f"{type(exc).__name__}: {exc}")
    finally:
        on_phase("cleaning up")
        load_stop.set()
        if load_thread is not None:
            load_thread.join(30)
        client.close()
        # The copy's cluster goes first: a job still running (an interrupted run is not cancelled) keeps asking
        # the broker for its topics' metadata, and the broker auto-creates a topic deleted under it.
        pool.release(cluster)
        with contextlib.suppress(Exception):  # the broker is the live stack's: its health is not this run's to report
            delete_topics(bootstrap, [copy.input_topic, copy.output_topic])
