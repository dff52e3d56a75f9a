"""A model's held-out error is read against the measurements' own scatter, and its prediction intervals are checked
on points they were not cut from (a 45 % error on six noisy points is not "45 % off")."""

from __future__ import annotations

import random

import pytest

from chronos.optimizer.model_trust import at_noise_floor, held_out_coverage, repeat_noise_floor, residual_bounds
from chronos.optimizer.models import Observation, fit_best


def test_the_noise_floor_predicts_each_repeat_by_the_mean_of_the_others_at_its_setting() -> None:
    repeats = [Observation(5, 1000, 20.0), Observation(5, 1000, 30.0), Observation(10, 1000, 40.0),
               Observation(10, 1000, 40.0), Observation(30, 1000, 99.0)]  # the last has no repeat: it says nothing
    assert repeat_noise_floor(repeats) == pytest.approx((10 / 20 + 10 / 30 + 0 + 0) / 4)


def test_without_a_setting_measured_twice_the_floor_is_unknown() -> None:
    assert repeat_noise_floor([Observation(i, 1000, 10.0 + i) for i in (2, 5, 10, 30)]) is None


def test_a_model_is_at_the_floor_within_five_points_of_it_and_never_when_the_floor_is_unknown() -> None:
    assert at_noise_floor(0.40, 0.36) and not at_noise_floor(0.45, 0.36)
    assert not at_noise_floor(0.01, None)


def test_intervals_are_judged_on_points_left_out_of_their_quantiles() -> None:
    """Ten residuals spread evenly: an 80 % interval cut from nine of them misses the point outside it."""
    ratios = [-0.5, -0.2, -0.1, -0.05, 0.0, 0.02, 0.05, 0.1, 0.2, 0.6]
    covered = held_out_coverage(ratios, 0.8)
    assert covered is not None and covered < 1.0, "the extremes fall outside the others' quantiles"
    assert covered >= 0.6
    assert held_out_coverage(ratios[:3], 0.8) is None, "each of three judged by an interval from two: not checked"


def test_a_fit_reports_its_floor_and_coverage_beside_its_error() -> None:
    """Three kills at each of four settings, 20 % scatter around a recovery that grows with the interval: the best
    model's error is at the floor, and its 80 % intervals cover most held-out points."""
    rng = random.Random(4)
    points = [Observation(i, r, (15 + i * r / 2000) * (1 + rng.gauss(0, 0.2)))
              for i in (2, 5, 10, 30) for r in (2000, 6000) for _ in range(3)]
    report = fit_best(points, seed=0, rising=True).report
    assert report.noise_floor_mape is not None and 0.1 < report.noise_floor_mape < 0.35
    assert at_noise_floor(report.held_out_mape, report.noise_floor_mape)
    assert report.coverage == 0.8
    assert report.held_out_coverage is not None and 0.6 <= report.held_out_coverage <= 1.0


def test_an_80_percent_interval_from_few_residuals_is_cut_where_it_covers_80_percent_of_new_points() -> None:
    """Split-conformal order statistics: from nine residuals, a tenth lands beyond the k-th largest with chance
    k / 10, so the bound is the largest, not a quantile interpolated below it (which covered 56-70 % held out)."""
    nine = [-0.4, -0.3, -0.2, -0.1, 0.05, 0.1, 0.2, 0.3, 0.5]
    assert residual_bounds(nine, 0.8) == (-0.4, 0.5)
    assert residual_bounds([float(i) for i in range(1, 40)], 0.8) == (0.0, 36.0), "widened to include 0; the 36th of 39"
    assert residual_bounds([], 0.8) == (0.0, 0.0)


def test_exchangeable_residuals_are_covered_as_claimed_when_judged_held_out() -> None:
    rng = random.Random(7)
    shares = [held_out_coverage([rng.gauss(0, 0.2) for _ in range(n)], 0.8) for n in (10, 20, 40) for _ in range(100)]
    mean = sum(s for s in shares if s is not None) / len(shares)
    assert 0.75 <= mean <= 0.85, mean


def test_from_fewer_residuals_than_an_order_statistic_can_serve_the_interval_still_covers_what_it_claims() -> None:
    """Five to eight residuals (a ten-minute profile's): the largest of four is exceeded by a fifth point with chance
    1/5, so order statistics alone covered 60-67 % held out; reaching to Student's t interval they cover ~80 %."""
    rng = random.Random(7)
    for n in (4, 5, 6, 8):
        shares = [held_out_coverage([rng.gauss(0, 0.2) for _ in range(n)], 0.8) for _ in range(200)]
        mean = sum(s for s in shares if s is not None) / len(shares)
        assert 0.75 <= mean <= 0.85, (n, mean)
    low, high = residual_bounds([-0.1, 0.0, 0.05, 0.1], 0.8)
    assert low < -0.1 and high > 0.1, "beyond the sample: a fifth point lands outside four with chance 2/5"
