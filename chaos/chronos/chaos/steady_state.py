"""The job's steady state, learned from the window before a fault.

Each signal gets a band of median +- k robust standard deviations (1.4826 * MAD) of its pre-fault
values, widened to at least a small share of the median so a perfectly flat series does not make
any wobble look like an anomaly. Lag and latency are one-sided (lower is never a problem). Throughput is
two-sided (a catch-up burst is not steady state) only where no lag was learnt: where it was, the lag says whether
the job has caught up, and a throughput above its band is a batch of fetches landing in one 0.5 s sample. At 500
events/s such samples read 550-595 every few readings against a band of 420-552 learnt from a 12 s warm-up, and a
chaos experiment's job, caught up within a second of running again, was "not recovered" for its whole 150 s.

Latency's band reaches at least one checkpoint interval above its median: an exactly-once job's output is
visible at the checkpoint commit after it, so its latency carries the phase of the checkpoints against the job's
windows, and a restart resets that phase. After a recovery the job can run on, caught up and steady, with its
latency a fixed share of an interval higher than before (measured: p99 8.2 s before a TaskManager kill, 11.6 s for
the 60 s after it, throughput and lag back at once, interval 5 s); that is a new phase, not a failure to recover.

Where the samples carry the input rate (the live tuner's do; a chaos experiment holds its load constant),
throughput is judged as its ratio to the input rate: under a daily swing the load after a failure is not the
load before it, and a job back to reading what arrives has recovered whatever the rate.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from chronos.model import SignalSample

MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Band:
    low: float | None
    high: float | None

    def contains(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


@dataclass(frozen=True)
class SteadyBands:
    """What "steady" meant before a fault, as bands learned from the readings (not the figures a profile
    stores: `chronos.profiler.records.SteadyState`); recovery is the first moment back inside them."""

    throughput: Band | None
    lag: Band | None
    p99_ms: Band | None
    keeping_up: Band | None = None  # throughput / input rate

    def holds_at(self, sample: SignalSample) -> bool:
        """True if the job runs and every learned signal is inside its band. A missing throughput or lag
        reading fails; a missing latency does not: output of an exactly-once job arrives in bursts at
        each checkpoint commit, so most instants have no latency to judge, only the bursts do."""
        if not sample.running:
            return False
        if self.lag is not None and (sample.lag is None or not self.lag.contains(sample.lag)):
            return False
        band, value = self.throughput, sample.throughput
        if self.keeping_up is not None and sample.input_rate:
            band, value = self.keeping_up, None if sample.throughput is None else sample.throughput / sample.input_rate
        if band is not None and self.lag is not None:
            band = Band(band.low, None)  # the lag is in its band: caught up, a reading above is a batch, not a catch-up
        if band is not None and (value is None or not band.contains(value)):
            return False
        return self.p99_ms is None or sample.p99_ms is None or self.p99_ms.contains(sample.p99_ms)


KEEPING_UP = SteadyBands(throughput=None, lag=None, p99_ms=None, keeping_up=Band(0.9, 1.1))
"""The steady state when none could be learned: reading what arrives, within 10 % (a catch-up burst is not it)."""


def _band(values: Sequence[float], k: float, min_share: float, two_sided: bool, min_abs: float) -> Band:
    center = statistics.median(values)
    spread = MAD_TO_SIGMA * statistics.median(abs(v - center) for v in values)
    half = max(k * spread, min_share * abs(center), min_abs)
    return Band(center - half if two_sided else None, center + half)


def learn_steady_state(
    before_fault: Sequence[SignalSample], k: float = 4.0, min_share: float = 0.1, min_samples: int = 5,
    min_latency_samples: int = 2, interval_ms: int = 0,
) -> SteadyBands:
    """Bands for every signal with enough readings in the pre-fault window. Latency arrives in bursts
    (one per checkpoint commit), so a window of a few intervals holds only a few readings of it; its band is at
    least `interval_ms` wide above (the module's docstring says why)."""
    def values(name: str) -> list[float]:
        return [v for s in before_fault if s.running and (v := getattr(s, name)) is not None]

    throughput, lag, p99 = values("throughput"), values("lag"), values("p99_ms")
    ratios = [s.throughput / s.input_rate for s in before_fault
              if s.running and s.throughput is not None and s.input_rate]
    if max(len(throughput), len(lag), len(p99)) < min_samples:
        raise ValueError(f"need at least {min_samples} pre-fault samples of some signal to learn a steady state")
    # Lag is counted in records, so its floor is half a second of the learned input rate: a quiet
    # baseline must not make a lag that a fraction of a second of input explains look like an anomaly.
    lag_floor = 0.5 * statistics.median(throughput) if len(throughput) >= min_samples else 100.0
    return SteadyBands(
        throughput=_band(throughput, k, min_share, True, 1.0) if len(throughput) >= min_samples else None,
        lag=_band(lag, k, min_share, False, max(100.0, lag_floor)) if len(lag) >= min_samples else None,
        p99_ms=_band(p99, k, min_share, False, max(50.0, interval_ms)) if len(p99) >= min_latency_samples else None,
        keeping_up=_band(ratios, k, min_share, True, 0.0) if len(ratios) >= min_samples else None,
    )
