"""Recording the live job's workload as an event-rate trace, read off its input topic's end offsets.

Offsets, not the job's own metrics: they are what arrived, whatever the job did with it, and reading
them does not touch the job, its consumer group or its output. The trace replays through the load
generator (`TraceRate`, scaled per load level) into a profiling copy's own input topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from chronos.errors import InvalidInput
from chronos.rates import TraceRate


class OffsetReader(Protocol):
    def total_end_offset(self) -> int:
        """Sum of the end offsets of every partition of the topic: events written so far."""
        ...


def record_trace(
    reader: OffsetReader,
    window_s: float,
    every_s: float = 5.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_point: Callable[[float, float], None] = lambda t, r: None,
) -> TraceRate:
    """Sample the offsets every `every_s` for `window_s`; each point is the mean rate of one step,
    placed at the step's start, so the replay starts at t = 0 with the first step's rate."""
    if window_s < every_s or every_s <= 0:
        raise InvalidInput(f"a workload window ({window_s:g} s) needs at least one step of {every_s:g} s")
    start = clock()
    last_t, last_offset = start, reader.total_end_offset()
    times: list[float] = []
    rates: list[float] = []
    for step in range(1, int(window_s // every_s + 1e-9) + 1):
        sleep(max(0.0, start + step * every_s - clock()))  # on a fixed grid: steps do not drift
        now, offset = clock(), reader.total_end_offset()
        rate = max(0.0, (offset - last_offset) / (now - last_t)) if now > last_t else 0.0
        times.append(round(last_t - start, 3))
        rates.append(rate)
        on_point(times[-1], rate)
        last_t, last_offset = now, offset
    return TraceRate(tuple(times), tuple(rates))
