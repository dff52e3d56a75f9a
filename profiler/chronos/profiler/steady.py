"""The fault-free figures of a profiling run, from what was sampled over its steady window."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from chronos.model import CheckpointEvent, SignalSample
from chronos.profiler.records import SteadyState


def summarise_steady(
    samples: Sequence[SignalSample],
    latencies_ms: Sequence[float],
    checkpoints: Sequence[CheckpointEvent],
    cpu_seconds: float | None,
    window_s: float,
) -> SteadyState:
    """Throughput: median of the samples while running. Latency: percentiles of every committed
    output record seen in the window. Checkpoints: medians of those completed in it. CPU: TaskManager
    CPU seconds over the window, as a percentage of one core."""
    rates = [s.throughput for s in samples if s.running and s.throughput is not None]
    p50 = p95 = p99 = None
    if latencies_ms:
        p50, p95, p99 = (float(v) for v in np.percentile(np.asarray(latencies_ms), [50, 95, 99]))
    return SteadyState(
        throughput=float(statistics.median(rates)) if rates else None,
        p50_ms=p50, p95_ms=p95, p99_ms=p99,
        checkpoint_duration_ms=float(statistics.median(c.duration_ms for c in checkpoints)) if checkpoints else None,
        checkpoint_size_bytes=float(statistics.median(c.state_bytes for c in checkpoints)) if checkpoints else None,
        taskmanager_cpu_pct=100 * cpu_seconds / window_s if cpu_seconds is not None and window_s > 0 else None,
    )
