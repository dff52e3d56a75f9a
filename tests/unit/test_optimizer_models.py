"""Model selection by held-out error, on synthetic jobs whose truth the test knows."""

import math
import random

import pytest

from chronos.optimizer.models import Observation, fit_best
from tests.support.truths import replay_bound


def test_the_reported_error_is_held_out_and_the_best_family_is_kept() -> None:
    model = fit_best(replay_bound(), seed=0)
    scores = dict(model.report.mape_by_family)
    assert set(scores) == {"linear", "linear-rising", "linear-interactions", "gradient-boosting", "gaussian-process"}
    assert model.report.family == min(scores, key=scores.__getitem__)
    assert model.report.held_out_mape == pytest.approx(scores[model.report.family], abs=1e-4)
    assert model.report.held_out_mape < 0.05
    assert model.report.family == "linear-interactions", "the truth is linear in interval x rate"
    assert model.report.observations == 30 and model.report.folds == 5


def test_an_unseen_interval_is_predicted_within_its_interval() -> None:
    model = fit_best(replay_bound(), seed=0)
    p = model.predict(12, 4000)
    truth = 15 + 12 * 4000 / 2000
    assert p.low <= p.median <= p.high
    assert p.low * 0.95 <= truth <= p.high * 1.05
    assert abs(p.median / truth - 1) < 0.1


def test_a_saturating_response_is_not_left_to_the_linear_model() -> None:
    """Latency that saturates with the interval: the Khaos-style quadratic misses it, a non-linear family does not."""
    rng = random.Random(3)
    obs = [Observation(i, r, 1000 * (1 - math.exp(-i / 6)) + r / 10 + rng.gauss(0, 5))
           for i in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) for r in (1000, 4000)]
    model = fit_best(obs, seed=0)
    scores = dict(model.report.mape_by_family)
    assert model.report.family != "linear-interactions"
    assert scores["linear-interactions"] > 2 * model.report.held_out_mape
    assert model.report.held_out_mape < 0.05


def test_too_few_observations_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 observations"):
        fit_best([Observation(1, 1, 1.0)] * 3)


def test_the_khaos_baseline_gets_khaos_s_linear_model_only() -> None:
    model = fit_best(replay_bound(), seed=0, families=("linear",))
    assert model.report.family == "linear" and dict(model.report.mape_by_family).keys() == {"linear"}
    with pytest.raises(ValueError, match="unknown model families"):
        fit_best(replay_bound(), seed=0, families=("arima",))
