"""The side by side's targets come from the bench's own profile: a pair under which every load of the scenario
has an interval meeting both, and the trough's longest such interval is at least twice the peak's (what an
interval that follows the load can save). Where both QoS worsen with the load, the interval good at the peak is
good everywhere: a static interval meeting both always exists, and the grid says which."""

from __future__ import annotations

from chronos.benchmarks.profile_grid import (
    SPREAD,
    adaptive_meets_all,
    best_static,
    grid,
    static_verdicts,
    suggest_targets,
)

INTERVALS = (2.0, 5.0, 10.0, 20.0, 40.0)
RATES = (8_000.0, 16_000.0)


def busy_recovery(interval_s: float, rate: float) -> float:
    """Replay grows with the interval, and drains slower the nearer the load is to capacity (20k)."""
    return 5 + interval_s * rate / (20_000 - rate)


def busy_p99(interval_s: float, rate: float) -> float:
    """Exactly-once output waits for a commit; near capacity, short intervals cost more than the job has."""
    overhead = 30.0 / interval_s if rate > 12_000 else 0.0
    return interval_s + overhead


def test_targets_leave_every_load_an_interval_and_the_trough_twice_the_peak_s_and_name_the_safe_static() -> None:
    points = grid(busy_recovery, busy_p99, INTERVALS, RATES)
    targets = suggest_targets(points)
    assert targets is not None
    assert adaptive_meets_all(points, targets.latency_s, targets.recovery_s)
    (_, trough), (_, peak) = targets.longest_s
    assert trough >= SPREAD * peak
    assert targets.static_always == peak, "the peak's interval is good at the trough too: QoS worsen with load"


def test_when_the_load_changes_nothing_there_is_no_room_and_no_targets_are_forced() -> None:
    points = grid(lambda i, r: 5 + i, lambda i, r: 1 + i, INTERVALS, RATES)
    assert suggest_targets(points) is None


def test_the_best_static_interval_meets_most_loads_and_among_equals_checkpoints_least() -> None:
    points = grid(busy_recovery, busy_p99, INTERVALS, RATES)
    verdicts = static_verdicts(points, latency_target_s=12, recovery_target_s=30)
    met = {v.interval_s: v.rates_met for v in verdicts}
    assert met == {2.0: 1, 5.0: 2, 10.0: 1, 20.0: 0, 40.0: 0}
    assert best_static(verdicts) == 5.0


def test_a_missing_model_is_not_known_rather_than_a_miss() -> None:
    points = grid(lambda i, r: None, busy_p99, INTERVALS, RATES)
    assert all(p.meets(100, 100) is None for p in points)
    assert suggest_targets(points) is None


def test_when_no_interval_meets_both_the_best_static_is_the_one_that_meets_most_of_them_not_the_longest() -> None:
    """An idle profile's flat p99 model (26 s everywhere, target 25 s): recovery decides."""
    points = grid(busy_recovery, lambda i, r: 26.0, INTERVALS, RATES)
    verdicts = static_verdicts(points, latency_target_s=25, recovery_target_s=30)
    assert not any(v.rates_met for v in verdicts)
    assert best_static(verdicts) == 5.0, "meets recovery at both rates; 10 s only at one"
