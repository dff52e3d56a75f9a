"""Event-rate profiles for the load generator: pure functions of elapsed seconds.

Profiles are the load shapes chronos must adapt to (a step in load, a daily-like sine, a recorded
trace); keeping them pure lets tests pin their values without producing a single event.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from chronos.errors import InvalidInput
from chronos.input_files import read_text


class RateProfile(Protocol):
    def rate_at(self, elapsed_s: float) -> float:
        """Target events per second at `elapsed_s` seconds after the start."""
        ...


@dataclass(frozen=True)
class ConstantRate:
    rate: float

    def rate_at(self, elapsed_s: float) -> float:
        return self.rate


@dataclass(frozen=True)
class StepRate:
    """`before` events/s until `at_s`, then `after`."""

    before: float
    after: float
    at_s: float

    def rate_at(self, elapsed_s: float) -> float:
        return self.before if elapsed_s < self.at_s else self.after


@dataclass(frozen=True)
class SineRate:
    """mean + amplitude * sin(2 pi t / period): a daily pattern compressed to `period_s`."""

    mean: float
    amplitude: float
    period_s: float

    def rate_at(self, elapsed_s: float) -> float:
        return max(0.0, self.mean + self.amplitude * math.sin(2 * math.pi * elapsed_s / self.period_s))


@dataclass(frozen=True)
class TraceRate:
    """Replay of a recorded (time, events/s) trace, linearly interpolated, held after its end."""

    times_s: tuple[float, ...]
    rates: tuple[float, ...]

    def rate_at(self, elapsed_s: float) -> float:
        if elapsed_s <= self.times_s[0]:
            return self.rates[0]
        if elapsed_s >= self.times_s[-1]:
            return self.rates[-1]
        i = bisect.bisect_right(self.times_s, elapsed_s)
        t0, t1 = self.times_s[i - 1], self.times_s[i]
        r0, r1 = self.rates[i - 1], self.rates[i]
        return r0 + (r1 - r0) * (elapsed_s - t0) / (t1 - t0)

    @property
    def duration_s(self) -> float:
        return self.times_s[-1]


@dataclass(frozen=True)
class ScaledRate:
    """A share of another profile, for one of several parallel generators."""

    profile: RateProfile
    factor: float

    def rate_at(self, elapsed_s: float) -> float:
        return self.profile.rate_at(elapsed_s) * self.factor


def load_trace(path: Path) -> TraceRate:
    """Read a CSV of `time,rate` rows (seconds, events/s; a header row is allowed)."""
    if not path.exists():
        raise InvalidInput(f"rate trace {path} does not exist")
    text = read_text(path, "rate trace")  # bounded: a FIFO or a device never blocks it
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InvalidInput(f"rate trace {path} is not CSV: {exc}") from None
    points: list[tuple[float, float]] = []
    for lineno, row in enumerate(rows, start=1):
        if not row or not "".join(row).strip():
            continue
        try:
            t, r = float(row[0]), float(row[1])
        except (ValueError, IndexError):
            if lineno == 1:
                continue  # header
            raise InvalidInput(f"{path}:{lineno}: expected 'time,rate' numbers, got {','.join(row)[:80]!r}") from None
        if not (math.isfinite(t) and math.isfinite(r)) or max(abs(t), r) > 1e12:
            raise InvalidInput(f"{path}:{lineno}: time and rate must be finite numbers of sensible size")
        if r < 0 or t < 0:
            raise InvalidInput(f"{path}:{lineno}: a {'rate' if r < 0 else 'time'} cannot be negative (times are "
                               "seconds from the trace's start)")
        points.append((t, r))
    if not points:
        raise InvalidInput(f"rate trace {path} has no rows")
    points.sort()
    if len({t for t, _ in points}) != len(points):
        raise InvalidInput(f"rate trace {path} repeats a time")
    return TraceRate(tuple(t for t, _ in points), tuple(r for _, r in points))


def events_due(profile: RateProfile, elapsed_s: float, step_s: float = 0.01) -> float:
    """Events a profile asks for between 0 and `elapsed_s` (trapezoid integral)."""
    steps = max(1, math.ceil(elapsed_s / step_s))
    width = elapsed_s / steps
    total = 0.0
    for i in range(steps):
        total += 0.5 * (profile.rate_at(i * width) + profile.rate_at((i + 1) * width)) * width
    return total


def save_trace(trace: TraceRate, path: Path) -> None:
    """Write a trace as `load_trace` reads it: a header, then `seconds,events_per_second` rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seconds", "events_per_second"])
        writer.writerows((f"{t:g}", f"{r:.1f}") for t, r in zip(trace.times_s, trace.rates, strict=True))
