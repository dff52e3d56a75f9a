"""How fast a lost TaskManager may be declared dead: the heartbeat settings chronos proposes, bounded below by
what the job's own TaskManagers were measured to stall for.

A short `heartbeat.timeout` finds a hung TaskManager sooner, but a JVM that stops for a long GC pause (or a
loaded host that delays a heartbeat) looks hung too, and failing a healthy job over costs a whole recovery. So
the timeout is never below `safety_factor` x the longest pause measured (GC pause or heartbeat delay), and a
timeout asked for below it is refused with the numbers. A killed TaskManager is found sooner than the timeout
anyway: `heartbeat.rpc-failure-threshold` consecutive failed heartbeat RPCs, one per `heartbeat.interval`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chronos.errors import InvalidInput
from chronos.optimizer.phase_model import RecoverySettings


@dataclass(frozen=True)
class PauseEvidence:
    """The longest stalls measured on the job's TaskManagers (JVM GC pauses, heartbeat delays), in seconds."""

    longest_gc_pause_s: float
    longest_heartbeat_delay_s: float = 0.0

    @property
    def longest_s(self) -> float:
        return max(self.longest_gc_pause_s, self.longest_heartbeat_delay_s)


@dataclass(frozen=True)
class DetectionProposal:
    settings: RecoverySettings
    timeout_floor_s: float
    reason: str

    def flink_config(self) -> dict[str, str]:
        s = self.settings
        return {"heartbeat.interval": f"{round(s.heartbeat_interval_s * 1000)} ms",
                "heartbeat.timeout": f"{round(s.heartbeat_timeout_s * 1000)} ms",
                "heartbeat.rpc-failure-threshold": str(s.rpc_failure_threshold)}


def timeout_floor_s(evidence: PauseEvidence, safety_factor: float) -> float:
    return evidence.longest_s * safety_factor


def check_timeout(timeout_s: float, evidence: PauseEvidence, safety_factor: float = 3.0) -> None:
    floor = timeout_floor_s(evidence, safety_factor)
    if timeout_s < floor:
        raise InvalidInput(f"heartbeat.timeout {timeout_s:g} s is below {safety_factor:g} x the longest pause measured "
                           f"on the job's TaskManagers ({evidence.longest_s:g} s = {floor:g} s): a pause like it would "
                           "fail the job over")


def propose_detection(evidence: PauseEvidence, current: RecoverySettings, *, safety_factor: float = 3.0,
                      min_timeout_s: float = 5.0, beats_per_timeout: int = 5) -> DetectionProposal:
    """The shortest timeout the evidence allows (never under `min_timeout_s`), `beats_per_timeout` heartbeats in
    it, and the current RPC failure threshold (at least 2: one lost RPC is not a dead TaskManager)."""
    if safety_factor < 1 or beats_per_timeout < 2 or min_timeout_s <= 0:
        raise InvalidInput("detection: safety_factor >= 1, beats_per_timeout >= 2 and min_timeout_s > 0")
    floor = timeout_floor_s(evidence, safety_factor)
    timeout = max(min_timeout_s, floor)
    interval = timeout / beats_per_timeout
    threshold = max(2, current.rpc_failure_threshold)
    proposed = replace(current, heartbeat_timeout_s=round(timeout, 1), heartbeat_interval_s=round(interval, 1),
                       rpc_failure_threshold=threshold)
    reason = (f"timeout {proposed.heartbeat_timeout_s:g} s (>= {safety_factor:g} x the longest pause measured, "
              f"{evidence.longest_s:g} s, and >= {min_timeout_s:g} s), {beats_per_timeout} heartbeats in it: a killed "
              f"TaskManager is found after ~{proposed.detection_bound_s('kill'):g} s instead of "
              f"{current.detection_bound_s('kill'):g} s, a hung one after {proposed.heartbeat_timeout_s:g} s instead of "
              f"{current.heartbeat_timeout_s:g} s")
    return DetectionProposal(proposed, floor, reason)
