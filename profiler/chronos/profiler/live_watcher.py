"""Reads the live job all through a profile, in a thread of its own: the readings chronos.profiler.live_watch judges
(whether another copy may start) and sums up (what the profile did to the live job).

A reading every TICK_S: the p99 of the output latencies that became visible over the last WINDOW_S (an exactly-once
sink shows output at its commits only, so a shorter window would often hold none), the throughput and the input lag.
A reading that fails (Flink or Kafka slow to answer) is skipped and counted, never raised into the profile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from chronos.model import SignalSample
from chronos.profiler.live_watch import (
    MIN_READINGS,
    GuardVerdict,
    LiveImpact,
    LiveReading,
    band_of,
    impact,
    judge,
    quantile,
)

TICK_S = 5.0
WINDOW_S = 30.0
RECENT_S = 20.0  # the readings a verdict looks at


class LiveJobReadings(Protocol):
    """What the watcher needs of the live job's signals (chronos.signals.live.LiveSignals has it)."""

    def sample(self) -> SignalSample: ...

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]: ...

    def close(self) -> None: ...


class LiveWatcher:
    def __init__(self, signals: LiveJobReadings, wall_ms: Callable[[], int], clock: Callable[[], float] = time.monotonic,
                 tick_s: float = TICK_S) -> None:
        self._signals, self._wall_ms, self._clock, self._tick_s = signals, wall_ms, clock, tick_s
        self._lock = threading.Lock()
        self._readings: list[LiveReading] = []
        self._profile_from: float | None = None
        self.failed_readings = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._tick_s):
            self.read_once()

    def read_once(self) -> None:
        try:
            sample = self._signals.sample()
            now_ms = self._wall_ms()
            latencies = self._signals.latencies_between(now_ms - int(WINDOW_S * 1000), now_ms)
        except Exception:  # noqa: BLE001 - a reading that fails, however, is a missing reading, never the watch's end
            self.failed_readings += 1
            return
        p99 = quantile(latencies, 0.99) if latencies else None
        with self._lock:
            self._readings.append(LiveReading(self._clock(), p99, sample.throughput, sample.lag))

    def band_ready(self) -> bool:
        """Enough readings before the profile to know the live job's band."""
        with self._lock:
            return sum(r.p99_ms is not None for r in self._readings) >= MIN_READINGS

    def begin_profile(self) -> None:
        """From now on, readings are the profile's ("during"); the ones before make the band."""
        with self._lock:
            self._profile_from = self._clock()

    def _split(self) -> tuple[list[LiveReading], list[LiveReading]]:
        with self._lock:
            readings, start = list(self._readings), self._profile_from
        if start is None:
            return readings, []
        return [r for r in readings if r.at_s < start], [r for r in readings if r.at_s >= start]

    def verdict(self) -> GuardVerdict:
        before, during = self._split()
        now = self._clock()
        return judge(band_of(before), [r for r in during if r.at_s >= now - RECENT_S])

    def impact(self, pauses: int, paused_s: float) -> LiveImpact:
        before, during = self._split()
        return impact(before, during, pauses, paused_s)

    def close(self) -> None:
        """Stop reading and close the signals it was given (their clients and consumer)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self._tick_s + 30)
        self._signals.close()
