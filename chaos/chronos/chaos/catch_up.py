"""What explains the last phase of a recovery, catch-up, read off the samples after the job runs again: the
backlog it restarted with, how fast it drained (records per second above the input rate), and the job's capacity
(the throughput it reached while draining, when it runs flat out: the profiler's measure of throughput).
catch-up = backlog / (capacity - input rate) is the phase model's law; these are its measured terms.
Pure: samples in, a value out."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from chronos.model import SignalSample


@dataclass(frozen=True)
class CatchUp:
    backlog: float | None  # records behind (consumer lag) when every task ran again
    input_rate: float | None  # records/s arriving meanwhile
    capacity: float | None  # records/s the job processed while draining (upper decile: it runs flat out)
    drain_rate: float | None  # records/s the backlog shrank by: capacity - input, as observed

    @property
    def measured(self) -> bool:
        return self.capacity is not None

    @property
    def predicted_s(self) -> float | None:
        """The phase model's catch-up from these terms (None when the job never outran its input)."""
        if self.backlog is None or self.capacity is None or self.input_rate is None:
            return None
        spare = self.capacity - self.input_rate
        return self.backlog / spare if spare > 0 else None


def _upper_decile(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


NO_CATCH_UP = CatchUp(None, None, None, None)


def explain_catch_up(after_fault: Sequence[SignalSample], running_ms: int | None,
                     recovered_ms: int | None) -> CatchUp:
    if running_ms is None:
        return CatchUp(None, None, None, None)
    end = recovered_ms if recovered_ms is not None else max((s.at_ms for s in after_fault), default=running_ms)
    window = [s for s in after_fault if running_ms <= s.at_ms <= end]
    lags = [s for s in window if s.lag is not None]
    backlog = lags[0].lag if lags else None
    throughputs = [s.throughput for s in window if s.throughput is not None]
    capacity = _upper_decile(throughputs) if throughputs else None
    inputs = [s.input_rate for s in window if s.input_rate is not None]
    input_rate = statistics.median(inputs) if inputs else None
    drain = None
    if len(lags) >= 2 and lags[-1].at_ms > lags[0].at_ms:
        assert lags[0].lag is not None and lags[-1].lag is not None
        drain = (lags[0].lag - lags[-1].lag) / ((lags[-1].at_ms - lags[0].at_ms) / 1000)
    return CatchUp(backlog, input_rate, capacity, drain)
