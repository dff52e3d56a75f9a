"""A recovery only gets longer as the interval or the load grows (more to replay), so a recovery model whose
predictions fall over the profiled range is set aside for one whose do not, however small its held-out error:
four points leave a straight line room to fit them all and still say nonsense between and beyond them."""

from __future__ import annotations

import itertools

import numpy as np

from chronos.optimizer.models import Observation, falls, fit_best

# The shop job's profile (bench/results/side_by_side_2/own): recoveries measured beside the live job on two cores.
SHOP = [Observation(3, 5985, 164.2), Observation(25, 5985, 123.6), Observation(5, 3015, 90.6),
        Observation(36, 3015, 35.7)]
RISING = [Observation(i, r, 20 + i * r / 2000) for i in (2, 5, 10, 30) for r in (1000, 4000)]


def test_unconstrained_the_shop_profile_picks_a_line_that_predicts_a_negative_recovery() -> None:
    fitted = fit_best(SHOP, seed=0)
    assert fitted.report.family == "linear" and fitted.report.held_out_mape < 0.05
    assert fitted.predict(60, 3015).median < 0, "the nonsense a rising fit sets aside"


def test_fitted_rising_the_families_that_fall_are_set_aside_and_named() -> None:
    fitted = fit_best(SHOP, seed=0, rising=True)
    assert "linear" in fitted.report.falling and fitted.report.family not in fitted.report.falling
    intervals = np.geomspace(3, 36, 10)
    for rate in (3015, 4500, 5985):
        predicted = [fitted.predict(float(i), rate).median for i in intervals]
        assert all(b >= a - 0.05 * abs(a) for a, b in itertools.pairwise(predicted)), (rate, predicted)
    assert fitted.predict(60, 3015).median > 0


def test_when_every_family_allowed_falls_the_best_is_kept_and_said_to_fall() -> None:
    fitted = fit_best(SHOP, seed=0, rising=True, families=("linear",))
    assert fitted.report.family == "linear" and fitted.report.falling == ("linear",)


def test_on_recoveries_that_rise_nothing_is_set_aside_and_the_choice_is_the_same() -> None:
    free, rising = fit_best(RISING, seed=0), fit_best(RISING, seed=0, rising=True)
    assert rising.report.falling == () and rising.report.family == free.report.family


def test_a_wiggle_within_five_percent_is_not_a_fall_and_a_drop_beyond_it_is() -> None:
    x = np.array([[1.0, 1.0], [60.0, 10.0]])
    assert not falls(lambda p: 100 - 3 * (p[:, 0] > 30), x)
    assert falls(lambda p: 100 - 10 * (p[:, 0] > 30), x)
    assert falls(lambda p: 100 - p[:, 1], x), "a heavier load never shortens a recovery either"
