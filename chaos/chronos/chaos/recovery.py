"""Recovery of one fault, read off a series of signal samples: a pure analysis.

Phases: fault -> detected (first sample not RUNNING) -> running (RUNNING again) -> recovered (every
learned signal back in its band and held there for `hold_ms`). A job that never gets back to steady
state within the timeout has no recovery time: it is reported as not recovered, never as a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chronos.chaos.steady_state import SteadyBands
from chronos.model import SignalSample


@dataclass(frozen=True)
class RecoveryPhases:
    fault_ms: int
    detected_ms: int | None
    running_ms: int | None
    recovered_ms: int | None
    peak_lag: float | None

    @property
    def recovered(self) -> bool:
        return self.recovered_ms is not None

    @property
    def recovery_s(self) -> float | None:
        return None if self.recovered_ms is None else (self.recovered_ms - self.fault_ms) / 1000


def analyse_recovery(
    fault_ms: int,
    after_fault: Sequence[SignalSample],
    steady: SteadyBands,
    hold_ms: int = 15_000,
    timeout_ms: int = 600_000,
) -> RecoveryPhases:
    samples = sorted((s for s in after_fault if fault_ms <= s.at_ms <= fault_ms + timeout_ms), key=lambda s: s.at_ms)
    detected = next((s.at_ms for s in samples if not s.running), None)
    running = None
    if detected is not None:
        running = next((s.at_ms for s in samples if s.at_ms > detected and s.running), None)
    lags = [s.lag for s in samples if s.lag is not None]
    recovered = None
    if running is not None:
        streak_start: int | None = None
        for sample in (s for s in samples if s.at_ms >= running):
            if steady.holds_at(sample):
                streak_start = sample.at_ms if streak_start is None else streak_start
                if sample.at_ms - streak_start >= hold_ms:
                    recovered = streak_start
                    break
            else:
                streak_start = None
    return RecoveryPhases(fault_ms, detected, running, recovered, max(lags) if lags else None)
