"""What chronos proposes for the settings that decide how fast a failure is found and rescheduled, each with
what the phase model predicts it saves and what it costs, so an operator sees the trade before applying it.

- detection: the heartbeat settings (chronos.optimizer.detection), never below what a measured pause allows;
- rescheduling: the restart delay (shorter, but not zero: a job failing on an external system would otherwise
  restart in a tight loop), and a spare TaskManager, so the restart lands on idle slots instead of waiting for
  a replacement to start and register (it costs a TaskManager's memory and its JVM's share of the cores);
- restore: task-local recovery once the state is large enough for its restore to matter (a task failing on a
  surviving TaskManager reads its state from local disk; a dead TaskManager's copy dies with it, so a kill gains
  nothing), at the cost of a second copy of the state on the TaskManagers' disks, written at every checkpoint.
Until recoveries with phases are measured, the phase model's parameters are `PRIOR` (said in the output).
Pure: values in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from chronos.optimizer.detection import PauseEvidence, propose_detection
from chronos.optimizer.phase_model import PRIOR as PRIOR_PARAMETERS
from chronos.optimizer.phase_model import Fault, PhaseModel, Phases, RecoveryConditions, RecoverySettings

PRIOR = PhaseModel(PRIOR_PARAMETERS, observations=0, held_out_mape=None)
JOB_LEVEL_CHANGES = ("restart delay", "task-local recovery")  # a job's own configuration can carry these


@dataclass(frozen=True)
class FaultForecast:
    fault: Fault
    now: Phases
    proposed: Phases


@dataclass(frozen=True)
class SettingChange:
    what: str
    now: str
    proposed: str
    why: str
    cost: str


@dataclass(frozen=True)
class RecoveryProposal:
    current: RecoverySettings
    proposed: RecoverySettings
    spare_taskmanagers: int
    evidence: PauseEvidence
    timeout_floor_s: float
    changes: tuple[SettingChange, ...]
    forecasts: tuple[FaultForecast, ...]
    model: Literal["prior", "fitted"]
    fitted: PhaseModel | None = None  # the fitted model, when one was


def propose_recovery(current: RecoverySettings, evidence: PauseEvidence, conditions: RecoveryConditions, *,
                     spare_allowed: bool, taskmanager_memory: str, model: PhaseModel | None = None,
                     safety_factor: float = 3.0, min_timeout_s: float = 5.0,
                     min_restart_delay_s: float = 0.5, local_recovery_min_bytes: float = 64 * 2**20) -> RecoveryProposal:
    """`conditions.state_bytes`: the largest job state on the cluster (its latest checkpoint)."""
    detection = propose_detection(evidence, current, safety_factor=safety_factor, min_timeout_s=min_timeout_s)
    proposed = detection.settings
    changes = [SettingChange(
        "heartbeat", f"every {current.heartbeat_interval_s:g} s, timeout {current.heartbeat_timeout_s:g} s, "
        f"{current.rpc_failure_threshold} failed RPCs",
        f"every {proposed.heartbeat_interval_s:g} s, timeout {proposed.heartbeat_timeout_s:g} s, "
        f"{proposed.rpc_failure_threshold} failed RPCs", detection.reason,
        f"a pause over {proposed.heartbeat_timeout_s:g} s fails the job over (longest measured "
        f"{evidence.longest_s:g} s: GC {evidence.longest_gc_pause_s:g} s, heartbeat delay "
        f"{evidence.longest_heartbeat_delay_s:g} s); {current.heartbeat_interval_s / proposed.heartbeat_interval_s:.0f}x "
        "the heartbeat messages (tiny)")]
    delay = min(current.restart_delay_s, max(min_restart_delay_s, 0.0))
    if delay < current.restart_delay_s:
        proposed = replace(proposed, restart_delay_s=delay)
        changes.append(SettingChange("restart delay", f"{current.restart_delay_s:g} s", f"{delay:g} s",
                                     "the wait before every restart is recovery time",
                                     "a job failing on an outside system retries that much sooner"))
    spare = 1 if spare_allowed and not current.spare_slots else 0
    if spare:
        proposed = replace(proposed, spare_slots=True)
        changes.append(SettingChange("spare TaskManager", "none", "1",
                                     "a restart lands on its idle slots instead of waiting for a replacement "
                                     "TaskManager to start and register",
                                     f"{taskmanager_memory} of memory and a JVM's share of the cores, idle"))
    state_mib = conditions.state_bytes / 2**20
    if not current.local_recovery and conditions.state_bytes >= local_recovery_min_bytes:
        proposed = replace(proposed, local_recovery=True)
        changes.append(SettingChange(
            "task-local recovery", "off", "on",
            f"a task failing on a TaskManager that lives on restores its state ({state_mib:,.0f} MiB) from local "
            "disk instead of the checkpoint storage (a killed TaskManager's copy is lost with it)",
            f"a second copy of the state (~{state_mib:,.0f} MiB) on the TaskManagers' local disks, written at "
            "every checkpoint"))
    used = model or PRIOR
    forecasts = tuple(FaultForecast(fault, used.predict(current, replace(conditions, fault=fault)),
                                    used.predict(proposed, replace(conditions, fault=fault)))
                      for fault in ("kill", "pause", "task"))
    return RecoveryProposal(current, proposed, spare, evidence, detection.timeout_floor_s, tuple(changes), forecasts,
                            "prior" if model is None else "fitted", model)
