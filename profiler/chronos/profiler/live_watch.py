"""What a profile does to the live job it exists to help, judged from the live job's own readings.

A profile's copies share the host with the live job (locally: its cores; on Kubernetes they would have resources
of their own). Nobody had measured what that cost the live job: two copies beside it on two cores raised its p99 by
12 %. So the live job is read before the first copy starts (its band) and all through the profile; no new
copy starts while the live job is out of its band (its p99 over the last readings above the band's, or its input lag
growing past it), and the profile reports the live job's p99 and throughput before and while it ran. Pure: values
in, values out; the readings come from chronos.profiler.live_watcher.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

TOLERANCE = 0.05  # the live job's p99 may be this much above its band: the figure the profile is held to
MIN_READINGS = 3  # fewer readings of a window say nothing about it
LAG_FLOOR = 1000.0  # records: a lag this small is within any band (one poll's worth at a few thousand ev/s)


@dataclass(frozen=True)
class LiveReading:
    at_s: float  # monotonic
    p99_ms: float | None
    throughput: float | None
    lag: float | None


@dataclass(frozen=True)
class LiveBand:
    """What the live job looked like before any copy ran: the upper end of its p99 readings (a reading is a window's
    p99, itself noisy: its 90th percentile, not its median, is what normal looks like at worst) and of its lag."""

    p99_ms: float
    lag: float
    readings: int


@dataclass(frozen=True)
class GuardVerdict:
    admit: bool
    why: str


@dataclass(frozen=True)
class LiveImpact:
    """The live job before the profile and while it ran (medians of the readings), and how long new copies waited
    for it to come back into its band."""

    p99_before_ms: float | None
    p99_during_ms: float | None
    throughput_before: float | None
    throughput_during: float | None
    readings_before: int
    readings_during: int
    pauses: int = 0
    paused_s: float = 0.0

    @property
    def p99_change(self) -> float | None:
        if self.p99_before_ms is None or self.p99_during_ms is None or self.p99_before_ms <= 0:
            return None
        return self.p99_during_ms / self.p99_before_ms - 1

    @property
    def within_tolerance(self) -> bool | None:
        change = self.p99_change
        return None if change is None else change <= TOLERANCE


def _values(readings: Sequence[LiveReading], field: str) -> list[float]:
    return [v for r in readings if (v := getattr(r, field)) is not None]


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def band_of(before: Sequence[LiveReading]) -> LiveBand | None:
    """The live job's band from its readings before the profile; None when too few carried a p99."""
    p99 = _values(before, "p99_ms")
    if len(p99) < MIN_READINGS:
        return None
    lags = _values(before, "lag")
    return LiveBand(quantile(p99, 0.9), max(lags, default=0.0), len(p99))


def judge(band: LiveBand | None, recent: Sequence[LiveReading]) -> GuardVerdict:
    """Whether another copy may start now: the live job's median p99 over the recent readings within its band (plus
    TOLERANCE) and its lag not past twice the band's (LAG_FLOOR at least). Without a band or recent readings nothing
    can be judged, and nothing is held back for it."""
    if band is None:
        return GuardVerdict(True, "the live job's band is unknown (too few p99 readings before the profile)")
    p99 = _values(recent, "p99_ms")
    if len(p99) < MIN_READINGS:
        return GuardVerdict(True, "too few recent readings of the live job to judge it")
    now = statistics.median(p99)
    limit = band.p99_ms * (1 + TOLERANCE)
    if now > limit:
        return GuardVerdict(False, f"the live job's p99 {now:,.0f} ms is above its band ({limit:,.0f} ms)")
    lags = _values(recent, "lag")
    lag_limit = max(2 * band.lag, LAG_FLOOR)
    if lags and statistics.median(lags) > lag_limit:
        return GuardVerdict(False, f"the live job's input lag {statistics.median(lags):,.0f} is above its band "
                                   f"({lag_limit:,.0f})")
    return GuardVerdict(True, f"the live job is in its band (p99 {now:,.0f} ms <= {limit:,.0f} ms)")


def impact(before: Sequence[LiveReading], during: Sequence[LiveReading], pauses: int = 0,
           paused_s: float = 0.0) -> LiveImpact:
    def median(readings: Sequence[LiveReading], field: str) -> float | None:
        values = _values(readings, field)
        return statistics.median(values) if len(values) >= MIN_READINGS else None

    return LiveImpact(median(before, "p99_ms"), median(during, "p99_ms"), median(before, "throughput"),
                      median(during, "throughput"), len(before), len(during), pauses, paused_s)
