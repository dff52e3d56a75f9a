"""One profiling run: a copy of the job on a cluster of its own, fed the recorded workload at one
load level, checkpointing at one interval, measured in steady state and then through K worst-case
faults.

The copy's checkpoints are paced (triggered over REST at the run's interval, as `chronos tune` paces the live job,
the copy's own configured interval a long fallback), so a copy outlives its run when the profile asks for it (a
`CopySlot`): the slot's next run at the same load and recovery settings paces the running copy at its own interval
instead of starting a cluster, submitting and waiting for its first checkpoints (~30 s of a ~110 s run measured on
the demo job), and its steady window is its first fault's warm-up. What is measured is also what the tuner does:
the cadence, and the quick checkpoints after a restore (chronos.tune.pacing). Whatever ends a run without a slot,
or a slot's copy, the copy, its load, its topics and its cluster are gone when it returns.

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
from dataclasses import dataclass, replace
from typing import Protocol

from chronos.chaos.faults import FaultInjector
from chronos.chaos.measure import SignalSource, measure_recovery
from chronos.chaos.timing import WorstCase
from chronos.clock import wall_ms
from chronos.errors import InvalidInput
from chronos.model import CheckpointHistory, CheckpointSettings, JobSpec, RecoveryMeasurement, SignalSample
from chronos.profiler.copies import JobCopy, profiling_copy
from chronos.profiler.input_sample import InputSample
from chronos.profiler.records import LIVE, ProfileRun, RecoveryVariant, RunConfig, SteadyState
from chronos.profiler.steady import summarise_steady
from chronos.rates import RateProfile, ScaledRate, TraceRate


class CopyControl(Protocol):
    """Submitting, pacing and stopping the copy on its cluster (Flink's REST API there)."""

    def submit(self, spec: JobSpec, settings: CheckpointSettings) -> str: ...
    def wait_until_running(self, job_id: str, timeout_s: float) -> None: ...
    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int) -> None:
        """Checkpoint the copy every `cadence_ms` from now on (triggered; its own interval is `fallback_ms`)."""
        ...
    def cancel(self, job_id: str) -> None: ...
    def close(self) -> None:
        """Stop pacing and let go of the cluster's API."""
        ...


class CopySignals(SignalSource, Protocol):
    """The copy's readings: samples and checkpoints (SignalSource, for the faults) and its output's latencies."""

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]: ...
    def close(self) -> None: ...


class RunningLoad(Protocol):
    def stop(self) -> None:
        """Stop producing and wait for the producer to finish."""
        ...


class ProfilingCluster(Protocol):
    """A cluster of the copy's own, with everything a run touches on it: the run reaches Flink, Kafka and the
    load generator only through these, so it runs unchanged on a fake cluster in the unit tests."""

    @property
    def bootstrap(self) -> str: ...
    def fault(self) -> FaultInjector: ...
    def taskmanager_cpu_seconds(self) -> float | None: ...
    def recovery_settings(self) -> tuple[tuple[str, str], ...]:
        """The recovery settings the copy's cluster runs with (stored with each of its recoveries)."""
        ...
    def control(self) -> CopyControl: ...
    def signals(self, job_id: str, copy: JobCopy, timestamp_field: str = "max_created_ms") -> CopySignals:
        """`timestamp_field`: the output records' epoch-ms field of their newest input (the job file's io)."""
        ...
    def create_topics(self, topics: list[str], partitions: int) -> None: ...
    def delete_topics(self, topics: list[str]) -> None: ...
    def start_load(self, topic: str, rate: RateProfile, vehicles: int, run_id: str, workers: int) -> RunningLoad: ...
    def start_replay(self, sample: InputSample, topics: tuple[tuple[str, str], ...], rate: RateProfile,
                     event_time_fields: tuple[str, ...], workers: int) -> RunningLoad:
        """The recorded sample into the copy's topics ((live, copy) pairs) at `rate`, looping."""
        ...


class ClusterPool(Protocol):
    def acquire(self, run_id: str, recovery: RecoveryVariant | None = None) -> ProfilingCluster:
        """A cluster for the run; `recovery`: settings over the live cluster's (None: the live cluster's own)."""
        ...
    def release(self, cluster: ProfilingCluster) -> None: ...


class RunInterrupted(Exception):
    """The profile is being stopped: the run ends early and is not recorded as done."""


class OutputOlderThanCopy(InvalidInput):
    """The copy's output says it is older than the copy: the times its latency is read from were not moved to now by
    the replay, so every run would measure the time since the input was recorded, not the job. A copy's input is all
    sent after its run starts, with every time the job file names moved to the moment it is sent, so the output's
    time (derived from the input's) cannot predate the run unless a time field was left out. Ends the profile."""


# The copy's own checkpoint interval: longer than any run, so every checkpoint of a run is one its pacing asked for.
PACED_FALLBACK_MS = 3_600_000


@dataclass
class RunningCopy:
    """A copy of the job on its cluster, with its load: made by a run, kept in a `CopySlot` for the next one."""

    name: str  # the run that started it: names its cluster directory, topics and consumer group
    cluster: ProfilingCluster
    load_scale: float
    recovery: str
    started_ms: int
    copy: JobCopy | None = None
    load: RunningLoad | None = None
    control: CopyControl | None = None
    job_id: str | None = None
    signals: CopySignals | None = None
    runs: int = 0

    def serves(self, config: RunConfig) -> bool:
        return self.load_scale == config.load_scale and self.recovery == config.recovery


class CopySlot:
    """Where one worker of a profile keeps its copy between runs. Whoever makes a slot closes it (`close`)."""

    def __init__(self, pool: ClusterPool) -> None:
        self.pool = pool
        self.running: RunningCopy | None = None

    def close(self, cancel: bool = True) -> None:
        if self.running is not None:
            running, self.running = self.running, None
            _stop_copy(self.pool, running, cancel)


@dataclass(frozen=True)
class RunPlan:
    """What every run of one profile shares."""

    profile_id: str
    spec: JobSpec
    workload: TraceRate
    faults: int = 1
    # Extra worst-case faults in the profile's first trial: one setting measured several times, so its models'
    # held-out error is read against the measurements' own scatter (chronos.optimizer.model_trust). A fault costs
    # ~37 s on this machine, a run's start more: repeats within a run are the cheap ones.
    repeats: int = 0
    partitions: int = 2
    before_s: float = 1.0
    steady_s: float = 30.0
    warmup_s: float = 0.0  # sampled before each fault beyond the steady window its bands are learnt from
    hold_s: float = 15.0
    timeout_s: float = 180.0
    vehicles: int = 1000
    sample: InputSample | None = None  # the job's own recorded input, replayed; None: generated vehicle events
    timestamp_field: str = "max_created_ms"  # in the copy's output: the newest input's time (its latency)
    recovery_variants: tuple[RecoveryVariant, ...] = ()  # what a RunConfig's `recovery` names, beside `live`
    reuse_copies: bool = True  # a worker's next run paces its running copy (a CopySlot) rather than starting one

    def recovery_variant(self, name: str) -> RecoveryVariant | None:
        if name == LIVE:
            return None
        for variant in self.recovery_variants:
            if variant.name == name:
                return variant
        known = ", ".join(v.name for v in self.recovery_variants) or "live only"
        raise ValueError(f"recovery settings {name!r} are not among the profile's ({known})")

    def steady_window_s(self, interval_s: float) -> float:
        """Longer than an interval with room to spare (a slow checkpoint, the commit's notice): an exactly-once job's
        output shows only at its commits, and a 30 s window at a 56 s interval saw none (a busy profile's run
        measured no p99, and its latency model lacked the point). One commit is enough: its records waited from 0 to
        a whole interval, the spread p99 is read from. Two intervals, as before, cost a 36 s run 30 s more."""
        return max(self.steady_s, 1.2 * interval_s + 5)

    def faults_in(self, trial_number: int) -> int:
        """The faults of one trial: the first (trial 0) carries the repeats, when there are faults at all."""
        return self.faults + (self.repeats if trial_number == 0 and self.faults else 0)

    def repeat_windows(self, trial_number: int) -> int:
        """Steady windows measured again after the faults: one in the trial that repeats its faults. A p99 is one
        point per run, so without it no latency or checkpoint figure was ever measured twice at one setting and
        those models' held-out error had no floor to be read against; a window (~35 s) is cheaper than a repeat
        run (start, settle, window: ~100 s)."""
        return 1 if trial_number == 0 and self.repeats and self.faults else 0

    def estimate_s(self, interval_s: float, trial_number: int | None = None, *, copy_running: bool = False) -> float:
        """A run's wall time, roughly: start (unless its copy runs already), two checkpoints (one), steady window, and per
        fault its warm-up beyond the window, the wait for the worst moment, ~60 s to recover and the hold."""
        faults = self.faults if trial_number is None else self.faults_in(trial_number)
        again = 0 if trial_number is None else self.repeat_windows(trial_number)
        return ((0 if copy_running else 40) + (1 if copy_running else 2) * interval_s
                + self.steady_window_s(interval_s) + faults * (self.warmup_s + interval_s + 60 + self.hold_s)
                + again * (interval_s + self.steady_window_s(interval_s)))


def check_profilable(spec: JobSpec) -> None:
    """What can be refused before any cluster starts: a job whose copy could not get topics of its own."""
    profiling_copy(spec, "check", "127.0.0.1:9092")


def execute_run(
    plan: RunPlan,
    trial_number: int,
    config: RunConfig,
    pool: ClusterPool,
    *,
    stop: threading.Event,
    on_phase: Callable[[str], None] = lambda phase: None,
    wall_ms: Callable[[], int] = wall_ms,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    slot: CopySlot | None = None,
) -> ProfileRun:
    """Phases in order: cluster, topics and load (the recorded sample replayed, or generated events), submission
    (unless the slot's copy serves the run), pacing at the run's interval, two checkpoints at it, steady window,
    faults. A stop request is honoured between phases (and within every wait). Without a slot, or when the run
    fails or is stopped, the load, the copy's cluster and its topics are gone when this returns or raises; with
    one, a completed run leaves its copy running in the slot."""
    check_profilable(plan.spec)
    run_id = f"t{trial_number}-{uuid.uuid4().hex[:8]}"  # names the copy's topics, group and cluster directory
    started = wall_ms()
    rate = sum(plan.workload.rates) / len(plan.workload.rates) * config.load_scale

    def check() -> None:
        if stop.is_set():
            raise RunInterrupted(run_id)

    def wait(seconds: float) -> None:
        check()
        sleep(seconds)

    def failed(error: str) -> ProfileRun:
        return ProfileRun(run_id, plan.profile_id, trial_number, config, rate, "failed", started, wall_ms(), error=error)

    check()
    running = slot.running if slot is not None else None
    if slot is not None and running is not None and not running.serves(config):
        on_phase("stopping the copy (another load or recovery setting)")
        slot.close()
        running = None
    if running is None:
        on_phase("starting a cluster")
        try:
            cluster = pool.acquire(run_id, plan.recovery_variant(config.recovery))
        except Exception as exc:  # noqa: BLE001 - a run that cannot start is a failed run, not a failed profile
            check()  # unless a stop ended its wait for a cluster: then it is interrupted, and requeued
            return failed(f"cluster: {exc}")
        running = RunningCopy(run_id, cluster, config.load_scale, config.recovery, started)
        if slot is not None:
            slot.running = running
    samples: list[SignalSample] = []
    keep = False
    interrupted = False
    try:
        if running.signals is None:
            _start_copy(plan, running, rate, on_phase, check)
        assert running.control is not None and running.job_id is not None and running.signals is not None
        running.runs += 1
        on_phase(f"pacing at {config.interval_ms / 1000:g} s ({rate:,.0f} ev/s)")
        running.control.pace(running.job_id, config.interval_ms, PACED_FALLBACK_MS)
        signals = _AtCadence(running.signals, config.interval_ms)
        # A new copy shows it checkpoints at all with two; a running one is at its new cadence from the first.
        settle = 2 if running.runs == 1 else 1
        steady, recoveries, again = _measure(plan, config, plan.faults_in(trial_number),
                                             plan.repeat_windows(trial_number), running.cluster, signals, samples,
                                             settle, on_phase, wait, check, clock, wall_ms)
        _check_output_times(plan, steady, (wall_ms() - running.started_ms) / 1000)
        keep = slot is not None
        return ProfileRun(run_id, plan.profile_id, trial_number, config, rate, "completed", started, wall_ms(),
                          steady, tuple(recoveries), tuple(samples), repeat_steady=tuple(again))
    except (RunInterrupted, OutputOlderThanCopy):
        interrupted = True
        raise
    except Exception as exc:  # noqa: BLE001 - recorded with the run; the profile goes on
        return failed(f"{type(exc).__name__}: {exc}")
    finally:
        if not keep:
            if slot is not None:
                slot.running = None
            _stop_copy(pool, running, cancel=not interrupted, on_phase=on_phase)


def _start_copy(plan: RunPlan, running: RunningCopy, rate: float, on_phase: Callable[[str], None],
                check: Callable[[], None]) -> None:
    """Topics, load, submission at the long fallback interval, RUNNING, signals: each kept on `running` as soon as
    it exists, so whatever fails midway, `_stop_copy` undoes what was done."""
    cluster = running.cluster
    running.copy = copy = profiling_copy(plan.spec, running.name, cluster.bootstrap)
    check()
    cluster.create_topics(list(copy.topics), plan.partitions)
    shape = ScaledRate(plan.workload, running.load_scale)
    if plan.sample is not None:
        running.load = cluster.start_replay(plan.sample, tuple(zip(copy.live_input_topics, copy.input_topics,
                                                                   strict=True)),
                                            shape, plan.spec.event_time_fields, workers=min(4, 1 + int(rate // 3000)))
    else:
        running.load = cluster.start_load(copy.input_topic, shape, plan.vehicles, running.name,
                                          workers=2 if rate > 6000 else 1)  # one producer process tops out near 8k ev/s
    on_phase(f"submitting ({rate:,.0f} ev/s)")
    running.control = control = cluster.control()
    running.job_id = control.submit(copy.spec, CheckpointSettings(PACED_FALLBACK_MS))
    control.wait_until_running(running.job_id, 120)
    check()
    running.signals = cluster.signals(running.job_id, copy, plan.timestamp_field)


def _stop_copy(pool: ClusterPool, running: RunningCopy, cancel: bool,
               on_phase: Callable[[str], None] = lambda phase: None) -> None:
    """The copy cancelled (unless a stop is in a hurry), its load stopped, its cluster released, its topics deleted."""
    on_phase("cleaning up")
    if running.signals is not None:
        with contextlib.suppress(Exception):
            running.signals.close()
    if cancel and running.control is not None and running.job_id is not None:
        with contextlib.suppress(Exception):  # the cluster goes next either way
            running.control.cancel(running.job_id)
    if running.load is not None:
        running.load.stop()
    if running.control is not None:
        running.control.close()
    # The copy's cluster goes first: a job still running (an interrupted run is not cancelled) keeps asking
    # the broker for its topics' metadata, and the broker auto-creates a topic deleted under it.
    pool.release(running.cluster)
    if running.copy is not None:
        with contextlib.suppress(Exception):  # the broker is the live stack's: its health is not this run's
            running.cluster.delete_topics(list(running.copy.topics))


class _AtCadence:
    """The copy's signals with its paced cadence as the checkpoint interval (its configured one is the fallback):
    the worst moment to fail is a few seconds before the next paced checkpoint, and each recovery is recorded at
    the interval it was measured at."""

    def __init__(self, signals: CopySignals, cadence_ms: int) -> None:
        self._signals, self._cadence_ms = signals, cadence_ms

    def sample(self) -> SignalSample:
        return self._signals.sample()

    def replay_now(self) -> int | None:
        return self._signals.replay_now()

    def restored_checkpoint_id(self) -> int | None:
        return self._signals.restored_checkpoint_id()

    def failed_since(self, since_ms: int) -> int | None:
        return self._signals.failed_since(since_ms)

    def checkpoint_history(self) -> CheckpointHistory:
        return replace(self._signals.checkpoint_history(), interval_ms=self._cadence_ms)

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]:
        return self._signals.latencies_between(since_ms, until_ms)


def _check_output_times(plan: RunPlan, steady: SteadyState, run_s: float) -> None:
    """Refuse a copy whose median output latency exceeds the time since its run started (OutputOlderThanCopy)."""
    if steady.p50_ms is None or steady.p50_ms / 1000 <= run_s:
        return
    fields = ", ".join(plan.spec.event_time_fields) or "none"
    raise OutputOlderThanCopy(
        f"the copy's output is older than the copy: its median {plan.timestamp_field} is {steady.p50_ms / 1000:,.0f} s "
        f"old {run_s:,.0f} s into the run, so the input times it comes from are not moved to now by the replay "
        f"(the job file's copy.event-time-fields: {fields}); name them there (JSON paths into the input records) and "
        "profile again: measured like this, a profile's p99 is the time since the input was recorded")


def _measure(plan: RunPlan, config: RunConfig, faults: int, again: int, cluster: ProfilingCluster,
             signals: _AtCadence, samples: list[SignalSample], settle: int, on_phase: Callable[[str], None],
             wait: Callable[[float], None], check: Callable[[], None], clock: Callable[[], float],
             wall_ms: Callable[[], int]) -> tuple[SteadyState, list[RecoveryMeasurement], list[SteadyState]]:
    """`settle` checkpoints at the run's cadence, the steady window, then the faults (each learns its steady state
    from the window, so none needs a warm-up: a repeat follows its predecessor's hold), then `again` steady windows,
    each after a checkpoint (whose commit carries the catch-up's last records): what the run is for."""
    on_phase("waiting for two checkpoints" if settle == 2 else "waiting for a checkpoint")
    _await_checkpoints(settle, config, signals, wait, clock, wall_ms)
    on_phase("steady state")
    steady = _steady_window(plan, config, cluster, signals, samples, wait, wall_ms)
    window = tuple(samples)  # every fault's steady bands: the job at this interval and load, before any fault
    recoveries: list[RecoveryMeasurement] = []
    for k in range(faults):
        check()
        on_phase(f"fault {k + 1}/{faults}")
        recoveries.append(measure_recovery(
            signals, cluster.fault(), WorstCase(plan.before_s), warmup_s=plan.warmup_s, hold_s=plan.hold_s,
            timeout_s=plan.timeout_s, sleep=wait, on_sample=samples.append, wall_ms=wall_ms,
            settings_in_force=cluster.recovery_settings(), learned_from=window,
        ))
    repeated: list[SteadyState] = []
    for k in range(again):
        check()
        on_phase(f"steady state again {k + 1}/{again}")
        _await_checkpoints(1, config, signals, wait, clock, wall_ms)
        repeated.append(_steady_window(plan, config, cluster, signals, samples, wait, wall_ms))
    return steady, recoveries, repeated


def _await_checkpoints(count: int, config: RunConfig, signals: _AtCadence, wait: Callable[[float], None],
                       clock: Callable[[], float], wall_ms: Callable[[], int]) -> None:
    """Until `count` checkpoints triggered from now have completed, or a minute past their cadence."""
    since_ms = wall_ms()
    deadline = clock() + count * config.interval_ms / 1000 + 60
    while sum(c.trigger_ms >= since_ms for c in signals.checkpoint_history().completed) < count \
            and clock() < deadline:
        wait(1)


def _steady_window(plan: RunPlan, config: RunConfig, cluster: ProfilingCluster, signals: _AtCadence,
                   samples: list[SignalSample], wait: Callable[[float], None],
                   wall_ms: Callable[[], int]) -> SteadyState:
    """The fault-free figures over one window, its samples appended to the run's."""
    window_start, cpu_start = wall_ms(), cluster.taskmanager_cpu_seconds()
    first = len(samples)
    while wall_ms() - window_start < plan.steady_window_s(config.interval_ms / 1000) * 1000:
        samples.append(signals.sample())
        wait(0.5)
    window_end, cpu_end = wall_ms(), cluster.taskmanager_cpu_seconds()
    cpu = cpu_end - cpu_start if cpu_start is not None and cpu_end is not None else None
    checkpoints = [c for c in signals.checkpoint_history().completed if window_start <= c.trigger_ms < window_end]
    return summarise_steady(samples[first:], signals.latencies_between(window_start, window_end), checkpoints, cpu,
                            (window_end - window_start) / 1000)
