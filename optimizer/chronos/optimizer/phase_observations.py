"""A measured recovery as the phase model sees it: the settings it was measured at (read back from the settings
in force stored with it), the conditions (fault, input rate, capacity, checkpoint age, state size) and its phases.

What the measurements cannot split is said, not guessed: the time from "failure seen" to "every task RUNNING"
holds both rescheduling and restore (Flink reports no moment between them that survives a TaskManager loss), so it
is all counted as rescheduling and restore is 0 (the model then fits restore to nothing, and rescheduling's base
carries it). A recovery without a capacity measured (or not recovered) is no observation.

The capacity a catch-up is divided by is the job's, not the one catch-up's: the upper decile of throughput while
one backlog drained ranged 2-30k records/s across 15 kills of one job at one rate here
(bench/results/recovery_settings.json), so `phase_observations` gives every recovery the median of them. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from chronos.model import RecoveryMeasurement
from chronos.optimizer.phase_model import Fault, PhaseObservation, Phases, RecoveryConditions
from chronos.optimizer.recovery_config import SPARE_KEY, recovery_settings


@dataclass(frozen=True)
class ProfiledRecovery:
    """A recovery measured on a profiling copy or in a chaos run, with the load and state it was measured at."""

    job_name: str
    measurement: RecoveryMeasurement
    rate: float
    state_bytes: float


def fault_kind(kind: str) -> Fault | None:
    """chronos's fault names as the phase model's kinds (a Kafka restart is none: the job does not fail over)."""
    kinds: dict[str, Fault] = {"kill-taskmanager": "kill", "pause-taskmanager": "pause", "kill-python-worker": "task"}
    return kinds.get(kind)


def phase_observation(m: RecoveryMeasurement, rate: float, state_bytes: float = 0.0,
                      capacity: float | None = None) -> PhaseObservation | None:
    """`capacity`: the job's (else this recovery's own)."""
    fault = fault_kind(m.fault.kind)
    at = m.fault.injected_wall_ms
    if (fault is None or m.detected_ms is None or m.running_ms is None or m.recovered_ms is None
            or m.capacity is None or m.checkpoint_age_at_fault_ms is None):
        return None
    config = dict(m.settings_in_force)
    settings = recovery_settings({k: v for k, v in config.items() if k != SPARE_KEY}, int(config.get(SPARE_KEY, "0")))
    conditions = RecoveryConditions(fault, m.catch_up_input_rate or rate, capacity or m.capacity,
                                    m.checkpoint_age_at_fault_ms / 1000, state_bytes, m.interval_ms / 1000)
    phases = Phases(max(0.0, (m.detected_ms - at) / 1000), max(0.0, (m.running_ms - m.detected_ms) / 1000), 0.0,
                    max(0.0, (m.recovered_ms - m.running_ms) / 1000))
    return PhaseObservation(settings, conditions, phases)


def phase_observations(measurements: Sequence[tuple[RecoveryMeasurement, float, float]]) -> list[PhaseObservation]:
    """(measurement, input rate, state bytes) triples of one job; the ones that are no observation left out."""
    return [o for m, rate, state in measurements
            if (o := phase_observation(m, rate, state, job_capacity([m for m, _, _ in measurements]))) is not None]


def job_capacity(measurements: Sequence[RecoveryMeasurement]) -> float | None:
    """The median of the capacities its catch-ups measured."""
    capacities = [m.capacity for m in measurements if m.capacity is not None]
    return statistics.median(capacities) if capacities else None


def live_phase_observation(settings_in_force: Sequence[tuple[str, str]], interval_ms: int, rate: float,
                           failed_ms: int, running_ms: int | None, recovered_ms: int | None,
                           catch_up_input_rate: float | None, capacity: float | None,
                           backlog_at_restart: float | None = None) -> PhaseObservation | None:
    """A failure the tuner saw on the live job: from when Flink saw it (`failed_ms`) to every task RUNNING, then
    the catch-up. Its detection is not measured (when the fault struck is not known), and what failed is not known
    either: counted as a dead TaskManager, the fault the phase model's rescheduling is most careful about. The
    backlog it restarted with stands for what came in since the restored checkpoint (its age and the unmeasured
    detection together); without it, the worst case: an interval."""
    if running_ms is None or recovered_ms is None or capacity is None:
        return None
    config = dict(settings_in_force)
    settings = recovery_settings({k: v for k, v in config.items() if k != SPARE_KEY}, int(config.get(SPARE_KEY, "0")))
    phases = Phases(0.0, max(0.0, (running_ms - failed_ms) / 1000), 0.0, max(0.0, (recovered_ms - running_ms) / 1000))
    input_rate = catch_up_input_rate or rate
    age = interval_ms / 1000
    if backlog_at_restart is not None and input_rate > 0:
        age = max(0.0, backlog_at_restart / input_rate - phases.reschedule_s)
    conditions = RecoveryConditions("kill", input_rate, capacity, age, 0.0, interval_ms / 1000)
    return PhaseObservation(settings, conditions, phases, detect_measured=False)
