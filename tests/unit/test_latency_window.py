import pytest

from chronos.jobs.latency import LatencyWindow


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
