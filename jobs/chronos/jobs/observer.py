"""The latency observer loop: committed output in, latency/throughput snapshots out."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from chronos.clock import wall_ms
from chronos.errors import InvalidInput
from chronos.input_files import read_own_json
from chronos.jobs.latency import LatencySnapshot, LatencyWindow
from chronos.jobs.output import committed_records

_SNAPSHOT = TypeAdapter(LatencySnapshot)  # its fields' types, finite numbers only (its pydantic config)
CLOCK_SKEW_S = 1.0  # a snapshot written a moment ago by another process can read as this much ahead


def write_snapshot(path: Path, snapshot: LatencySnapshot, wall_s: float) -> None:
    """Atomically replace the snapshot file that `chronos status` reads."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"wall_time_s": wall_s, **asdict(snapshot)}))
    os.replace(tmp, path)


def read_snapshot(path: Path, max_age_s: float, wall_s: float) -> LatencySnapshot | None:
    """The observer's last snapshot if it is fresh, else None (a stale number is worse than none)."""
    if not path.exists():
        return None
    try:
        data = read_own_json(path, "latency snapshot")
        age_s = wall_s - float(data.pop("wall_time_s", 0))
        if not -CLOCK_SKEW_S <= age_s <= max_age_s:  # stale, or dated later than now: not a reading of now
            return None
        return _SNAPSHOT.validate_python(data)
    except (InvalidInput, TypeError, ValueError, AttributeError):  # ValidationError is a ValueError
        return None  # not a snapshot chronos's observer wrote: no number rather than a made-up one


def observe(
    consumer: Any,
    window: LatencyWindow,
    on_snapshot: Callable[[LatencySnapshot], None],
    *,
    every_s: float = 1.0,
    duration_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = wall_ms,
    should_stop: Callable[[], bool] = lambda: False,
    timestamp_field: str = "max_created_ms",
) -> LatencySnapshot:
    start = last = clock()
    snapshot = window.snapshot(start)
    for batch in committed_records(consumer, poll_ms=int(min(every_s, 1.0) * 500), timestamp_field=timestamp_field):
        now = clock()
        visible_ms = wall_ms()
        for record in batch:
            window.add(now, float(visible_ms - record.max_created_ms), record.event_count)
        if now - last >= every_s:
            snapshot = window.snapshot(now)
            on_snapshot(snapshot)
            last = now
        if should_stop() or (duration_s is not None and now - start >= duration_s):
            break
    return window.snapshot(clock())
