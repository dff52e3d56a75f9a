"""Firing strategies, driven by a synthetic checkpoint history and chosen clock readings."""

import pytest

from chronos.chaos.timing import (
    BestCase,
    FixedOffset,
    NoCheckpointYet,
    PoissonArrivals,
    WorstCase,
    next_trigger_after_ms,
    trigger_period_ms,
)
from chronos.model import CheckpointEvent, CheckpointHistory


def history(interval_ms: int = 10_000, triggers: tuple[int, ...] = (100_000, 110_000, 120_000), duration_ms: int = 200):
    return CheckpointHistory(interval_ms, tuple(
        CheckpointEvent(i, t, t + duration_ms, duration_ms) for i, t in enumerate(triggers, start=1)))


def test_next_trigger_is_phased_on_the_last_checkpoint() -> None:
    h = history()
    assert next_trigger_after_ms(h, 121_000) == 130_000
    assert next_trigger_after_ms(h, 130_000) == 140_000
    assert next_trigger_after_ms(h, 155_500) == 160_000


def test_slow_checkpoints_stretch_the_period() -> None:
    h = history(interval_ms=10_000, triggers=(0, 14_000, 28_000, 42_000))
    assert trigger_period_ms(h) == 14_000
    assert next_trigger_after_ms(h, 43_000) == 56_000


def test_worst_case_fires_the_given_seconds_before_the_next_checkpoint() -> None:
    h = history()
    assert WorstCase(before_s=3).fire_at_ms(h, now_ms=121_000) == 127_000
    # too late for this one: aim at the one after
    assert WorstCase(before_s=3).fire_at_ms(h, now_ms=128_000) == 137_000


def test_worst_case_cannot_be_earlier_than_a_whole_period() -> None:
    with pytest.raises(ValueError, match="every 10 s"):
        WorstCase(before_s=12).fire_at_ms(history(), now_ms=121_000)


def test_best_case_fires_just_after_a_checkpoint_completes() -> None:
    h = history(duration_ms=200)
    assert BestCase(after_s=0.5).fire_at_ms(h, now_ms=120_500) == 120_700  # the last one just completed
    assert BestCase(after_s=0.5).fire_at_ms(h, now_ms=125_000) == 130_700  # the next one
    assert BestCase(after_s=0.5).fire_at_ms(h, now_ms=131_000) == 140_700


def test_strategies_never_fire_in_the_past() -> None:
    h = history()
    for now in range(120_000, 200_000, 777):
        for strategy in (WorstCase(3), BestCase(0.5), FixedOffset(0), PoissonArrivals(30, seed=1)):
            assert strategy.fire_at_ms(h, now) >= now


def test_worst_case_leaves_more_to_replay_than_best_case() -> None:
    h = history()
    for now in range(121_000, 200_000, 1_000):
        worst, best = WorstCase(3).fire_at_ms(h, now), BestCase(0.5).fire_at_ms(h, now)
        since_checkpoint = [(t - 120_000) % 10_000 for t in (worst, best)]
        assert since_checkpoint[0] >= 6_000 > since_checkpoint[1]


def test_poisson_draws_are_seeded_and_have_the_mean() -> None:
    assert PoissonArrivals(60, seed=7).delay_ms() == PoissonArrivals(60, seed=7).delay_ms()
    delays = [PoissonArrivals(60, seed=3, index=i).delay_ms() for i in range(2000)]
    assert sum(delays) / len(delays) == pytest.approx(60_000, rel=0.1)


def test_aiming_at_checkpoints_needs_one() -> None:
    with pytest.raises(NoCheckpointYet):
        WorstCase().fire_at_ms(CheckpointHistory(10_000), now_ms=0)
