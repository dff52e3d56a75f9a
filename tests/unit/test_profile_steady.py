"""Steady-state figures of a run from synthetic samples."""

import pytest

from chronos.model import CheckpointEvent, SignalSample
from chronos.profiler.steady import summarise_steady


def test_figures_come_from_the_running_samples_every_latency_and_the_checkpoints() -> None:
    samples = [SignalSample(i, True, 1000.0 + i) for i in range(5)] + [SignalSample(9, False, 0.0)]
    latencies = [float(v) for v in range(1, 101)]
    checkpoints = [CheckpointEvent(1, 0, 90, 90, 1000), CheckpointEvent(2, 0, 110, 110, 3000),
                   CheckpointEvent(3, 0, 100, 100, 2000)]
    s = summarise_steady(samples, latencies, checkpoints, cpu_seconds=15.0, window_s=30.0)
    assert s.throughput == 1002.0, "a sample while not running does not count"
    assert s.p50_ms == pytest.approx(50.5) and s.p99_ms == pytest.approx(99.01)
    assert s.p95_ms is not None and s.p50_ms < s.p95_ms < s.p99_ms
    assert (s.checkpoint_duration_ms, s.checkpoint_size_bytes) == (100.0, 2000.0)
    assert s.taskmanager_cpu_pct == 50.0


def test_what_was_not_seen_is_none_not_zero() -> None:
    s = summarise_steady([], [], [], None, 30.0)
    assert s == type(s)(None, None, None, None, None, None, None)
