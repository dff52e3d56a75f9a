"""End-to-end latency over a sliding window: the QoS signal chronos optimises.

Latency of an output record = the time it became visible to a read_committed reader minus the
newest creation time of the input events it covers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from pydantic import ConfigDict, with_config


@with_config(ConfigDict(allow_inf_nan=False, extra="forbid"))  # read back from its file: finite numbers only
@dataclass(frozen=True)
class LatencySnapshot:
    at_s: float
    window_s: float
    records: int
    events: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    records_per_s: float
    events_per_s: float


class LatencyWindow:
    """Keeps (arrival, latency, events) samples of the last `window_s` seconds."""

    def __init__(self, window_s: float) -> None:
        if window_s <= 0:
            raise ValueError("window must be positive")
        self.window_s = window_s
        self._samples: deque[tuple[float, float, int]] = deque()

    def add(self, now_s: float, latency_ms: float, events: int) -> None:
        self._samples.append((now_s, latency_ms, events))

    def _evict(self, now_s: float) -> None:
        while self._samples and self._samples[0][0] < now_s - self.window_s:
            self._samples.popleft()

    def snapshot(self, now_s: float) -> LatencySnapshot:
        self._evict(now_s)
        if not self._samples:
            return LatencySnapshot(now_s, self.window_s, 0, 0, None, None, None, None, 0.0, 0.0)
        latencies = np.fromiter((s[1] for s in self._samples), dtype=float)
        events = sum(s[2] for s in self._samples)
        p50, p95, p99 = (float(v) for v in np.percentile(latencies, [50, 95, 99]))
        return LatencySnapshot(
            now_s, self.window_s, len(latencies), events, p50, p95, p99, float(latencies.max()),
            len(latencies) / self.window_s, events / self.window_s,
        )
