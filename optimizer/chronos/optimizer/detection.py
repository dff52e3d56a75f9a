"""How fast a lost TaskManager may be declared dead: the heartbeat settings chronos proposes, bounded below by
what the job's own TaskManagers were measured to stall for.

A short `heartbeat.timeout` finds a hung TaskManager sooner, but a JVM that stops for a long GC pause (or a
loaded host that delays a heartbeat) looks hung too, and failing a healthy job over costs a whole recovery. So
the timeout is never below `safety_factor` x the longest pause measured (GC pause or heartbeat delay), and a
timeout asked for below it is refused with the numbers. A killed TaskManager is found sooner than the timeout
anyway: `heartbeat.rpc-failure-threshold` consecutive failed heartbeat RPCs, one per `heartbeat.interval`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
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
class PauseSample:
    """One TaskManager read at `at_ms`: its JVM's collections and their total time so far (every collector
    summed), and when the resource manager last heard its heartbeat."""

    taskmanager: str
    at_ms: int
    gc_count: int
    gc_time_ms: int
    last_heartbeat_ms: int | None


def evidence_from(samples: Sequence[PauseSample], heartbeat_interval_s: float) -> PauseEvidence:
    """The longest stalls the samples prove or bound, per TaskManager, over consecutive samples:
    - GC: the collection time between two samples in which a collection happened; several collections in one
      step are summed, so this bounds the longest single pause from above (a safe side to err on: a larger
      floor for the timeout);
    - heartbeat: the gap between two heartbeats heard (or the silence up to a sample) beyond the interval.
    Not a pause: a TaskManager never heard yet (Flink reports 0: one registering, e.g. a replacement), and the
    silence of one gone from the last samples (a dead TaskManager until Flink let it go; a bench once measured
    such a "pause" of minutes right after a kill and proposed pausing for three times it)."""
    gc, heartbeat = 0.0, 0.0
    by_tm: dict[str, list[PauseSample]] = {}
    for sample in sorted(samples, key=lambda x: x.at_ms):
        by_tm.setdefault(sample.taskmanager, []).append(sample)
    last_ms = max((x.at_ms for x in samples), default=0)
    for series in by_tm.values():
        series = [x if x.last_heartbeat_ms is None or 0 < x.last_heartbeat_ms <= x.at_ms
                  else replace(x, last_heartbeat_ms=None) for x in series]
        still_there = series[-1].at_ms >= last_ms - 1000  # in the last round of samples (taken 0.5 s apart)
        for before, after in itertools.pairwise(series):
            if after.gc_count > before.gc_count and after.gc_time_ms >= before.gc_time_ms:
                gc = max(gc, (after.gc_time_ms - before.gc_time_ms) / 1000)
        heard = sorted({x.last_heartbeat_ms for x in series if x.last_heartbeat_ms is not None})
        gaps = [(b - a) / 1000 for a, b in itertools.pairwise(heard)]
        silences = [(x.at_ms - x.last_heartbeat_ms) / 1000 for x in series
                    if x.last_heartbeat_ms is not None and still_there]
        heartbeat = max([heartbeat, *(g - heartbeat_interval_s for g in gaps + silences)])
    return PauseEvidence(round(gc, 3), round(max(0.0, heartbeat), 3))


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
                           f"on the job's TaskManagers ({safety_factor:g} x {evidence.longest_s:g} s = {floor:g} s): "
                           "a pause like it would fail the job over")


def propose_detection(evidence: PauseEvidence, current: RecoverySettings, *, safety_factor: float = 3.0,
                      min_timeout_s: float = 5.0, beats_per_timeout: int = 10) -> DetectionProposal:
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
