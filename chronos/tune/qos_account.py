"""Seconds the job spent outside its targets: the figure every strategy is judged by.

Latency: a second counts when the output is more than the target behind its input, read two ways: the
output that became visible since the last reading had a p99 above the target, or nothing newer than the
target's age has become visible while input keeps arriving (an exactly-once sink at a long interval shows
no output at all for most of the interval; counting only the readings that saw output would hide it). Both
equal the share of input seconds whose records came out late.

Recovery: a failure's seconds beyond the target, exactly as its measured recovery says. The watch confirms a
recovery only after a hold; charging live up to `now - hold` and the rest up to the recovered moment at the
close never counts the hold, so the running total, the summary and the measured recoveries agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from chronos.optimizer.policy import TunePolicy
from chronos.tune.failures import ObservedFailure
from chronos.tune.readings import LiveReading


@dataclass
class QosAccount:
    hold_ms: int = 15_000
    latency_s: float = 0.0
    recovery_s: float = 0.0
    last_at_ms: int | None = None
    _failure_ms: int | None = None  # the failure being charged
    _charged_to_ms: int = 0

    def add(self, reading: LiveReading, policy: TunePolicy, open_failure_ms: int | None,
            closed: ObservedFailure | None = None) -> tuple[float, float]:
        dt = 0.0 if self.last_at_ms is None else max(0.0, (reading.at_ms - self.last_at_ms) / 1000)
        self.last_at_ms = reading.at_ms
        latency = dt if _late(reading, policy.latency_p99_ms) else 0.0
        recovery = 0.0
        if closed is not None:
            recovery += self._charge(closed.failed_ms, closed.recovered_ms or reading.at_ms, policy)
        if open_failure_ms is not None:
            recovery += self._charge(open_failure_ms, reading.at_ms - self.hold_ms, policy)
        self.latency_s += latency
        self.recovery_s += recovery
        return latency, recovery

    def finish(self, open_failure_ms: int | None, now_ms: int, policy: TunePolicy) -> float:
        """At the end of a run: a failure still open counts up to now."""
        if open_failure_ms is None:
            return 0.0
        extra = self._charge(open_failure_ms, now_ms, policy)
        self.recovery_s += extra
        return extra

    def _charge(self, failed_ms: int, until_ms: int, policy: TunePolicy) -> float:
        if failed_ms != self._failure_ms:
            self._failure_ms, self._charged_to_ms = failed_ms, failed_ms + int(policy.recovery_s * 1000)
        if until_ms <= self._charged_to_ms:
            return 0.0
        charged = (until_ms - self._charged_to_ms) / 1000
        self._charged_to_ms = until_ms
        return charged


def _late(reading: LiveReading, target_ms: float | None) -> bool:
    if target_ms is None:
        return False
    if reading.recent_p99_ms is not None and reading.recent_p99_ms > target_ms:
        return True
    input_arrives = reading.input_rate is None or reading.input_rate > 0
    return input_arrives and reading.output_staleness_ms is not None and reading.output_staleness_ms > target_ms
