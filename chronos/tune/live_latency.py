"""The live job's own p99 as model points: a window of steady running at one interval is one observation.

A profile's latency model comes from copies, a few minutes each at a few intervals, and a copy is not the job (on a
shared host its p99 read up to seven times the live job's). The live job measures the same thing at the
interval it actually runs, for as long as it runs there: each window of steady running (the job RUNNING, no failure
being watched, one interval in force, p99 and input rate read) becomes an Observation the latency model is refitted
with, as a live recovery already is (chronos.tune.fitting.ModelBook). Consecutive windows at one interval are
repeats, so the model's repeat-noise floor is measured on the live job too.

A window starts with its first readings left out, for as long as the policy's p99 window (each reading's p99 covers
it, so until then it still holds what came before: a retune's outage, the previous interval's commits) and at least
two intervals, then spans its length (ten minutes by default: a refit at most that often) and at least five
intervals; its p99 is the median of its readings' p99s, its rate their mean. Pure: readings in, observations out; the
loop feeds it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from chronos.optimizer.model_values import Observation
from chronos.tune.readings import LiveReading

SETTLE_S, SETTLE_INTERVALS = 60.0, 2  # left out at a window's start: the policy's p99 window, and two intervals
LENGTH_S, LENGTH_INTERVALS = 600.0, 5  # counted: ten minutes by default, and five commits


@dataclass
class LiveLatencyWindows:
    settle_s: float = SETTLE_S
    length_s: float = LENGTH_S
    _start_ms: int | None = None
    _interval_ms: int | None = None
    _p99s: list[float] = field(default_factory=list)
    _rates: list[float] = field(default_factory=list)

    def reset(self) -> None:
        """Start again: a retune, a cadence change or a failure ends the window under way."""
        self._start_ms, self._interval_ms, self._p99s, self._rates = None, None, [], []

    def feed(self, reading: LiveReading, in_failure: bool) -> Observation | None:
        """The observation a window ends with, when this reading completes one; else None."""
        steady = (reading.running and not in_failure and reading.interval_ms and reading.p99_ms is not None
                  and reading.input_rate is not None)
        if not steady or reading.interval_ms != self._interval_ms:
            self.reset()
            if not steady:
                return None
            self._start_ms, self._interval_ms = reading.at_ms, reading.interval_ms
        assert self._start_ms is not None and self._interval_ms is not None and reading.p99_ms is not None
        interval_s = self._interval_ms / 1000
        settle_ms = 1000 * max(self.settle_s, SETTLE_INTERVALS * interval_s)
        length_ms = 1000 * max(self.length_s, LENGTH_INTERVALS * interval_s)
        elapsed = reading.at_ms - self._start_ms
        if elapsed < settle_ms:
            return None
        self._p99s.append(reading.p99_ms)
        self._rates.append(reading.input_rate or 0.0)
        if elapsed < settle_ms + length_ms:
            return None
        observation = Observation(interval_s, statistics.fmean(self._rates), statistics.median(self._p99s))
        # The next window follows at once: the job has settled at this interval, nothing to leave out.
        self._start_ms, self._p99s, self._rates = reading.at_ms - int(settle_ms), [], []
        return observation
