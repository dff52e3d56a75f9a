from pathlib import Path

import pytest

from chronos.jobs.latency import LatencyWindow
from chronos.jobs.observer import read_snapshot, write_snapshot


def test_percentiles_cover_only_the_window() -> None:
    window = LatencyWindow(window_s=10)
    window.add(0.0, 10_000.0, 5)  # falls out of the window below
    for i in range(100):
        window.add(20.0 + i * 0.01, float(i + 1), 2)
    snap = window.snapshot(now_s=21.0)
    assert snap.records == 100
    assert snap.events == 200
    assert snap.p50_ms == pytest.approx(50.5)
    assert snap.p99_ms == pytest.approx(99.01)
    assert snap.max_ms == 100.0
    assert snap.events_per_s == pytest.approx(20.0)


def test_an_empty_window_reports_no_latency_rather_than_zero() -> None:
    snap = LatencyWindow(5).snapshot(100.0)
    assert (snap.records, snap.p99_ms, snap.events_per_s) == (0, None, 0.0)


def test_window_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LatencyWindow(0)


def test_status_takes_a_snapshot_of_now_only(tmp_path: Path) -> None:
    """The observer's snapshot file is state read back: one dated in the future (or past any date), or holding what
    no snapshot holds, is no reading at all rather than one shown."""
    path = tmp_path / "latency.json"
    good = LatencyWindow(5).snapshot(100.0)
    write_snapshot(path, good, wall_s=1_000.0)
    assert read_snapshot(path, max_age_s=10, wall_s=1_005.0) == good
    assert read_snapshot(path, max_age_s=10, wall_s=1_011.0) is None, "stale"
    assert read_snapshot(path, max_age_s=10, wall_s=900.0) is None, "dated 100 s from now"
    for text in ('{"wall_time_s": 1e400', '{"wall_time_s": 1000, "p99_ms": "lots"}', '{"wall_time_s": 1000, "x": 1}'):
        path.write_text(text)
        assert read_snapshot(path, max_age_s=10, wall_s=1_001.0) is None, text
