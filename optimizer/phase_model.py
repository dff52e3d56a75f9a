"""Recovery as the sum of its phases, each explained by the settings that govern it, so a model fitted on the
settings profiled can say what a setting never profiled would do (the black-box families only interpolate in
interval and rate).

- detection: Flink finds a dead TaskManager when `heartbeat.rpc-failure-threshold` consecutive heartbeat RPCs
  fail, one per `heartbeat.interval` (whichever of that and `heartbeat.timeout` comes first); a hung one answers
  nothing and is found only at the timeout: detect = base + slope x that bound;
- rescheduling (failure seen -> every task RUNNING): base + slope x the restart strategy's delay, plus the time a
  replacement TaskManager takes to start and register when no spare slots wait for the tasks;
- restore: base + per GiB of state;
- catch-up: the backlog (input since the restored checkpoint was taken, including the outage) drained at the
  spare throughput: k x rate x (checkpoint age + outage) / (capacity - rate).
Each phase is a least-squares fit (numpy) on the phases measured; the error reported is held out by setting
(every recovery of one setting predicted from the others), never the fit error. Pure: values in, values out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Fault = Literal["kill", "pause"]
GIB = 1024**3


@dataclass(frozen=True)
class RecoverySettings:
    """The settings that decide how fast a failure is found and rescheduled (Flink 2.x defaults)."""

    heartbeat_interval_s: float = 10.0
    heartbeat_timeout_s: float = 50.0
    rpc_failure_threshold: int = 2
    restart_delay_s: float = 1.0
    spare_slots: bool = False

    def detection_bound_s(self, fault: Fault) -> float:
        if fault == "pause":
            return self.heartbeat_timeout_s
        return min(self.heartbeat_timeout_s, self.rpc_failure_threshold * self.heartbeat_interval_s)


@dataclass(frozen=True)
class RecoveryConditions:
    """What the job was doing when the fault came."""

    fault: Fault
    rate: float  # input, records/s
    capacity: float  # the most it sustains, records/s
    checkpoint_age_s: float  # since the trigger of the checkpoint it restores
    state_bytes: float


@dataclass(frozen=True)
class Phases:
    detect_s: float
    reschedule_s: float
    restore_s: float
    catchup_s: float

    @property
    def total_s(self) -> float:
        return self.detect_s + self.reschedule_s + self.restore_s + self.catchup_s


@dataclass(frozen=True)
class PhaseObservation:
    settings: RecoverySettings
    conditions: RecoveryConditions
    measured: Phases


@dataclass(frozen=True)
class PhaseParameters:
    detect_base_s: float
    detect_per_bound: float
    reschedule_base_s: float
    reschedule_per_delay: float
    replacement_s: float  # extra without spare slots: a TaskManager must start and register
    restore_base_s: float
    restore_s_per_gib: float
    catchup_factor: float  # 1: the backlog drains at exactly the spare throughput


@dataclass(frozen=True)
class PhaseModel:
    parameters: PhaseParameters
    observations: int
    held_out_mape: float | None  # by setting: None with fewer than two settings

    def predict(self, settings: RecoverySettings, conditions: RecoveryConditions) -> Phases:
        p = self.parameters
        detect = max(0.0, p.detect_base_s + p.detect_per_bound * settings.detection_bound_s(conditions.fault))
        reschedule = max(0.0, p.reschedule_base_s + p.reschedule_per_delay * settings.restart_delay_s
                         + (0.0 if settings.spare_slots else p.replacement_s))
        restore = max(0.0, p.restore_base_s + p.restore_s_per_gib * conditions.state_bytes / GIB)
        spare = conditions.capacity - conditions.rate
        backlog = conditions.rate * (conditions.checkpoint_age_s + detect + reschedule + restore)
        catchup = math.inf if spare <= 0 else max(0.0, p.catchup_factor * backlog / spare)
        return Phases(detect, reschedule, restore, catchup)


def _lstsq(rows: Sequence[Sequence[float]], values: Sequence[float]) -> list[float]:
    """Least squares on the columns that vary (the first, the intercept, always kept); a column that never varies
    gets 0: with one value of a setting, nothing tells its effect from the base."""
    matrix = np.asarray(rows, dtype=float)
    varied = [0] + [j for j in range(1, matrix.shape[1]) if np.ptp(matrix[:, j]) > 1e-9]
    solution = np.linalg.lstsq(matrix[:, varied], np.asarray(values, dtype=float), rcond=None)[0]
    full = [0.0] * matrix.shape[1]
    for j, value in zip(varied, solution, strict=True):
        full[j] = float(value)
    return full


# Before any recovery is measured in phases: detection as its bound (the failed heartbeat RPCs or the timeout,
# plus half a second), rescheduling a second plus the restart delay plus ~8 s for a replacement TaskManager to
# start and register (the recovery sweep on the 2-core machine: all RUNNING 18.8-30.4 s after a kill at the
# default heartbeats), restore a second plus 10 s per GiB, catch-up at exactly the spare throughput.
PRIOR = PhaseParameters(detect_base_s=0.5, detect_per_bound=1.0, reschedule_base_s=1.0, reschedule_per_delay=1.0,
                        replacement_s=8.0, restore_base_s=1.0, restore_s_per_gib=10.0, catchup_factor=1.0)


def fit_parameters(observations: Sequence[PhaseObservation], prior: PhaseParameters = PRIOR) -> PhaseParameters:
    """Each phase on its own features, as the smallest departure from `prior` that fits (least squares on what the
    prior leaves unexplained, minimum norm): a setting never varied keeps the prior's effect instead of being
    credited with whatever split of base and slope happens to fit one value."""
    if not observations:
        raise ValueError("no recoveries to fit the phase model on")
    p = prior
    detect = _lstsq([[1.0, o.settings.detection_bound_s(o.conditions.fault)] for o in observations],
                    [o.measured.detect_s - p.detect_base_s - p.detect_per_bound
                     * o.settings.detection_bound_s(o.conditions.fault) for o in observations])
    reschedule = _lstsq([[1.0, o.settings.restart_delay_s, 0.0 if o.settings.spare_slots else 1.0]
                         for o in observations],
                        [o.measured.reschedule_s - p.reschedule_base_s - p.reschedule_per_delay * o.settings.restart_delay_s
                         - (0.0 if o.settings.spare_slots else p.replacement_s) for o in observations])
    restore = _lstsq([[1.0, o.conditions.state_bytes / GIB] for o in observations],
                     [o.measured.restore_s - p.restore_base_s - p.restore_s_per_gib * o.conditions.state_bytes / GIB
                      for o in observations])
    xs, ys = [], []
    for o in observations:
        spare = o.conditions.capacity - o.conditions.rate
        if spare > 0:
            m = o.measured
            x = o.conditions.rate * (o.conditions.checkpoint_age_s + m.detect_s + m.reschedule_s + m.restore_s) / spare
            xs.append(x)
            ys.append(m.catchup_s - p.catchup_factor * x)
    denominator = sum(x * x for x in xs)
    factor = p.catchup_factor + (sum(x * y for x, y in zip(xs, ys, strict=True)) / denominator if denominator > 0 else 0.0)
    return PhaseParameters(p.detect_base_s + detect[0], p.detect_per_bound + detect[1],
                           p.reschedule_base_s + reschedule[0], p.reschedule_per_delay + reschedule[1],
                           p.replacement_s + reschedule[2], p.restore_base_s + restore[0],
                           p.restore_s_per_gib + restore[1], factor)


def held_out_by_setting(observations: Sequence[PhaseObservation]) -> float | None:
    """Mean absolute percentage error of the total recovery, every setting's recoveries predicted by a model
    fitted on the other settings' alone."""
    settings = list(dict.fromkeys(o.settings for o in observations))
    if len(settings) < 2:
        return None
    errors = []
    for held in settings:
        rest = [o for o in observations if o.settings != held]
        model = PhaseModel(fit_parameters(rest), len(rest), None)
        for o in (o for o in observations if o.settings == held):
            predicted = model.predict(o.settings, o.conditions).total_s
            errors.append(abs(predicted - o.measured.total_s) / o.measured.total_s)
    return float(np.mean(errors))


def fit_phase_model(observations: Sequence[PhaseObservation]) -> PhaseModel:
    return PhaseModel(fit_parameters(observations), len(observations), held_out_by_setting(observations))
