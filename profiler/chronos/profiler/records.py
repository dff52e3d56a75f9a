"""What a profile is made of: the configuration of one profiling run and what it measured.

Frozen values, so the store, the runner, the study and the report pass them around without sharing
anything mutable; the recoveries are chronos.model's RecoveryMeasurement, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from chronos.model import RecoveryMeasurement, SignalSample

LIVE = "live"


@dataclass(frozen=True)
class RunConfig:
    """One point of the profiling space: checkpoint interval, load (a factor on the workload), and the recovery
    settings its cluster runs with (a RecoveryVariant's name: `live` is the live cluster's own)."""

    interval_ms: int
    load_scale: float
    recovery: str = LIVE


@dataclass(frozen=True)
class RecoveryVariant:
    """Recovery settings a profile explores beside the live cluster's: Flink config lines put over the live
    cluster's, and the spare TaskManagers its clusters start with."""

    name: str
    flink_settings: tuple[tuple[str, str], ...]
    spare_taskmanagers: int


@dataclass(frozen=True)
class SteadyState:
    """The job's behaviour over the fault-free window of a run. None: not measurable there."""

    throughput: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    checkpoint_duration_ms: float | None
    checkpoint_size_bytes: float | None
    taskmanager_cpu_pct: float | None


@dataclass(frozen=True)
class ProfileRun:
    """One copy of the job under one configuration; `status` is "completed" or "failed" (`error` says why)."""

    run_id: str
    profile_id: str
    trial_number: int
    config: RunConfig
    load_rate: float
    status: str
    started_ms: int
    ended_ms: int
    steady: SteadyState | None = None
    recoveries: tuple[RecoveryMeasurement, ...] = ()
    samples: tuple[SignalSample, ...] = ()
    error: str = ""
    # The steady window measured again after the faults, in a run that repeats them (RunPlan.repeat_windows): the
    # fault-free figures at one setting twice, so the latency and checkpoint models get a repeat-noise floor too.
    repeat_steady: tuple[SteadyState, ...] = ()
