"""Recovery as the sum of its phases, each explained by the settings that govern it, so a model fitted on the
settings profiled can say what a setting never profiled would do (the black-box families only interpolate in
interval and rate).

- detection: Flink finds a dead TaskManager when `heartbeat.rpc-failure-threshold` consecutive heartbeat RPCs
  fail, one per `heartbeat.interval` (whichever of that and `heartbeat.timeout` comes first); the kill lands at a
  random moment of an interval, so on average (threshold - 1/2) intervals. A hung one answers nothing and is found
  only at the timeout, counted from the last heartbeat heard (on average half an interval before the pause):
  detect = max(floor, base + slope x that expected time). The floor is what no heartbeat setting lowers (the job
  leaving RUNNING as Flink's REST API shows it: measured 2.5-4 s here with 0.5-2 s heartbeats);
- rescheduling (failure seen -> every task RUNNING): base + slope x the restart strategy's delay, plus, when no
  spare slots wait for the tasks, what is left of a replacement TaskManager's start once the failure is found (it
  starts when the old one dies, on Kubernetes or under a supervisor, so a slow detection hides it);
- restore: base + per GiB of state;
- catch-up: the backlog (input since the restored checkpoint was taken, including the outage) drained at the
  spare throughput, after a start-up (base) and, for an exactly-once sink, the wait for the first checkpoint after
  the restart to commit what was replayed (a share of the interval):
  base + per_interval x interval + k x rate x (checkpoint age + outage) / (capacity - rate).
Each phase is a least-squares fit (numpy) on the phases measured; the error reported is held out by setting
(every recovery of one setting predicted from the others), never the fit error. Pure: values in, values out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Fault = Literal["kill", "pause", "task"]  # a dead TaskManager, a hung one, a task failing on a live one
GIB = 1024**3


@dataclass(frozen=True)
class RecoverySettings:
    """The settings that decide how fast a failure is found and rescheduled (Flink 2.x defaults)."""

    heartbeat_interval_s: float = 10.0
    heartbeat_timeout_s: float = 50.0
    rpc_failure_threshold: int = 2
    restart_delay_s: float = 1.0
    spare_slots: bool = False
    restart_strategy: str = "exponential-delay"  # Flink 2.x's default with checkpointing; the delay is its first
    local_recovery: bool = False  # a copy of the state kept on the TaskManager, restored from on a task failure

    def detection_bound_s(self, fault: Fault) -> float:
        """The longest it can take (what an operator is promised)."""
        if fault == "task":
            return 0.0  # the failing task reports itself
        if fault == "pause":
            return self.heartbeat_timeout_s
        return min(self.heartbeat_timeout_s, self.rpc_failure_threshold * self.heartbeat_interval_s)

    def expected_detection_s(self, fault: Fault) -> float:
        """What it takes on average: the fault lands at a random moment of a heartbeat interval."""
        if fault == "task":
            return 0.0
        if fault == "pause":
            return max(0.0, self.heartbeat_timeout_s - self.heartbeat_interval_s / 2)
        return min(self.heartbeat_timeout_s, (self.rpc_failure_threshold - 0.5) * self.heartbeat_interval_s)


@dataclass(frozen=True)
class RecoveryConditions:
    """What the job was doing when the fault came."""

    fault: Fault
    rate: float  # input, records/s
    capacity: float  # the most it sustains, records/s
    checkpoint_age_s: float  # since the trigger of the checkpoint it restores
    state_bytes: float
    interval_s: float = 0.0  # the checkpoint interval in force


@dataclass(frozen=True)
class Phases:
    detect_s: float
    reschedule_s: float
    restore_s: float
    catchup_s: float

    @property
    def total_s(self) -> float:
        return self.detect_s + self.reschedule_s + self.restore_s + self.catchup_s

    @property
    def until_running_s(self) -> float:
        """The outage: from the fault until the job runs again (what recovery settings change; catch-up follows)."""
        return self.detect_s + self.reschedule_s + self.restore_s


@dataclass(frozen=True)
class PhaseObservation:
    settings: RecoverySettings
    conditions: RecoveryConditions
    measured: Phases
    # False for a live failure: the moment it struck is not known, only when Flink saw it (detect_s is then 0 and
    # fits nothing; its total is not the fault's, so it is never a held-out case either).
    detect_measured: bool = True


@dataclass(frozen=True)
class PhaseParameters:
    detect_floor_s: float  # no heartbeat setting finds a failure sooner
    detect_base_s: float
    detect_per_bound: float
    reschedule_base_s: float
    reschedule_per_delay: float
    replacement_s: float  # without spare slots, from the fault until a replacement TaskManager has registered
    restore_base_s: float
    restore_s_per_gib: float
    catchup_base_s: float  # the restarted job's start-up before it drains at full speed
    catchup_per_interval: float  # exactly-once output: the wait for the first checkpoint after the restart
    catchup_factor: float  # 1: the backlog drains at exactly the spare throughput
    # A task restored from its TaskManager's local copy reads this share of the time per GiB (local disk instead of
    # the checkpoint storage). A prior, not fitted: no task failure with local recovery on a state large enough to
    # tell has been measured here.
    restore_local_share: float = 0.25


@dataclass(frozen=True)
class PhaseModel:
    parameters: PhaseParameters
    observations: int
    held_out_mape: float | None  # by setting: None with fewer than two settings

    def predict(self, settings: RecoverySettings, conditions: RecoveryConditions) -> Phases:
        p = self.parameters
        detect = max(p.detect_floor_s, p.detect_base_s
                     + p.detect_per_bound * settings.expected_detection_s(conditions.fault), 0.0)
        # Only a dead TaskManager needs replacing: a task failure keeps its slots, a paused one comes back.
        waiting = 0.0 if settings.spare_slots or conditions.fault != "kill" else max(0.0, p.replacement_s - detect)
        reschedule = max(0.0, p.reschedule_base_s + p.reschedule_per_delay * settings.restart_delay_s + waiting)
        local = settings.local_recovery and conditions.fault == "task"
        restore = max(0.0, p.restore_base_s + p.restore_s_per_gib * conditions.state_bytes / GIB
                      * (p.restore_local_share if local else 1.0))
        spare = conditions.capacity - conditions.rate
        backlog = conditions.rate * (conditions.checkpoint_age_s + detect + reschedule + restore)
        catchup = math.inf if spare <= 0 else max(0.0, p.catchup_base_s + p.catchup_per_interval * conditions.interval_s
                                                  + p.catchup_factor * backlog / spare)
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


# Before any recovery is measured in phases: detection its expected time plus a second and a half, never under
# 2.5 s (bench/results/recovery_settings*.json: 11-17 s mean at Flink's defaults, whose expected time is 15 s;
# 2.4-3.8 s with 0.5-2 s heartbeats), rescheduling a second plus the restart delay plus what is left of the ~8 s
# a replacement TaskManager takes to start and register (2-core machine, local stack), restore a second plus
# 10 s per GiB, catch-up a second of start-up, half an interval's wait for the first checkpoint, and the backlog
# at exactly the spare throughput.
PRIOR = PhaseParameters(detect_floor_s=2.5, detect_base_s=1.5, detect_per_bound=1.0, reschedule_base_s=1.0,
                        reschedule_per_delay=1.0, replacement_s=8.0, restore_base_s=1.0, restore_s_per_gib=10.0,
                        catchup_base_s=1.0, catchup_per_interval=0.5, catchup_factor=1.0)


def _fit_detection(observations: Sequence[PhaseObservation], p: PhaseParameters) -> tuple[float, float, float]:
    """Floor, base and slope: the recoveries the line would put under the floor measure the floor (their mean), the
    others the line (as a departure from the prior); split again with the new line until the split holds."""
    floor, base, slope = p.detect_floor_s, p.detect_base_s, p.detect_per_bound
    observations = [o for o in observations if o.detect_measured]
    for _ in range(5):
        expected = [(o, o.settings.expected_detection_s(o.conditions.fault)) for o in observations]
        low = [o.measured.detect_s for o, e in expected if base + slope * e <= floor]
        line = [(o, e) for o, e in expected if base + slope * e > floor]
        new_floor = float(np.mean(low)) if low else p.detect_floor_s
        if line:
            departure = _lstsq([[1.0, e] for _, e in line],
                               [o.measured.detect_s - p.detect_base_s - p.detect_per_bound * e for o, e in line])
            new_base, new_slope = p.detect_base_s + departure[0], p.detect_per_bound + departure[1]
        else:
            new_base, new_slope = p.detect_base_s, p.detect_per_bound
        if (new_floor, new_base, new_slope) == (floor, base, slope):
            break
        floor, base, slope = new_floor, new_base, new_slope
    return floor, base, slope


def _fit_catchup(observations: Sequence[PhaseObservation], p: PhaseParameters) -> tuple[float, float, float]:
    rows, values = [], []
    for o in observations:
        spare = o.conditions.capacity - o.conditions.rate
        if spare > 0:
            m = o.measured
            drain = o.conditions.rate * (o.conditions.checkpoint_age_s + m.detect_s + m.reschedule_s + m.restore_s) / spare
            rows.append([1.0, o.conditions.interval_s, drain])
            values.append(m.catchup_s - p.catchup_base_s - p.catchup_per_interval * o.conditions.interval_s
                          - p.catchup_factor * drain)
    if not rows:
        return p.catchup_base_s, p.catchup_per_interval, p.catchup_factor
    departure = _lstsq(rows, values)
    return p.catchup_base_s + departure[0], p.catchup_per_interval + departure[1], p.catchup_factor + departure[2]


def _fit_reschedule(observations: Sequence[PhaseObservation], p: PhaseParameters) -> tuple[float, float, float]:
    """Base, slope per delay and replacement: the recoveries without spare slots found before the replacement
    registered wait for it (reschedule + detect = base + slope x delay + replacement), the others do not; split
    again with the new replacement time until the split holds."""
    base, slope, replacement = p.reschedule_base_s, p.reschedule_per_delay, p.replacement_s
    # Whether a replacement was waited for depends on when the failure was found: unknown for a live one that
    # could have waited (no spare, a dead TaskManager), which is left out here.
    observations = [o for o in observations
                    if o.detect_measured or o.settings.spare_slots or o.conditions.fault != "kill"]
    if not observations:
        return base, slope, replacement
    for _ in range(5):
        waits = [0.0 if o.settings.spare_slots or o.conditions.fault != "kill" or o.measured.detect_s >= replacement
                 else 1.0 for o in observations]
        departure = _lstsq([[1.0, o.settings.restart_delay_s, w] for o, w in zip(observations, waits, strict=True)],
                           [o.measured.reschedule_s + w * o.measured.detect_s - p.reschedule_base_s
                            - p.reschedule_per_delay * o.settings.restart_delay_s - w * p.replacement_s
                            for o, w in zip(observations, waits, strict=True)])
        new = (p.reschedule_base_s + departure[0], p.reschedule_per_delay + departure[1], p.replacement_s + departure[2])
        if new == (base, slope, replacement):
            break
        base, slope, replacement = new
    return base, slope, replacement


def fit_parameters(observations: Sequence[PhaseObservation], prior: PhaseParameters = PRIOR) -> PhaseParameters:
    """Each phase on its own features, as the smallest departure from `prior` that fits (least squares on what the
    prior leaves unexplained, minimum norm): a setting never varied keeps the prior's effect instead of being
    credited with whatever split of base and slope happens to fit one value."""
    if not observations:
        raise ValueError("no recoveries to fit the phase model on")
    p = prior
    floor, detect_base, detect_slope = _fit_detection(observations, p)
    reschedule = _fit_reschedule(observations, p)
    restore = _lstsq([[1.0, o.conditions.state_bytes / GIB] for o in observations],
                     [o.measured.restore_s - p.restore_base_s - p.restore_s_per_gib * o.conditions.state_bytes / GIB
                      for o in observations])
    catchup_base, per_interval, factor = _fit_catchup(observations, p)
    return PhaseParameters(floor, detect_base, detect_slope, *reschedule, p.restore_base_s + restore[0],
                           p.restore_s_per_gib + restore[1], catchup_base, per_interval, factor)


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
        for o in (o for o in observations if o.settings == held and o.detect_measured):
            predicted = model.predict(o.settings, o.conditions).total_s
            errors.append(abs(predicted - o.measured.total_s) / o.measured.total_s)
    return float(np.mean(errors)) if errors else None


def fit_phase_model(observations: Sequence[PhaseObservation]) -> PhaseModel:
    return PhaseModel(fit_parameters(observations), len(observations), held_out_by_setting(observations))
