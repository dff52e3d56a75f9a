"""The workload forecast: forecasters compete on the series itself; the damped trend keeps the job
unless another is clearly (10 %) better in the backtest."""

import math
import random

import pytest

from chronos.optimizer.forecast import forecast_rate


def test_a_flat_noisy_load_is_not_forecast_to_trend() -> None:
    rng = random.Random(1)
    rates = [5000 * (1 + rng.gauss(0, 0.03)) for _ in range(60)]
    forecast = forecast_rate(rates, step_s=10, horizon_s=300)
    assert forecast.error is not None and forecast.error < 0.08
    assert 4500 < forecast.peak < 5800
    assert {name for name, _ in forecast.errors} == {"last-value", "recent-mean", "holt-damped"}
    errors = dict(forecast.errors)
    best = min(errors, key=errors.__getitem__)
    assert forecast.method == best or (forecast.method == "holt-damped" and errors[best] > 0.9 * errors["holt-damped"])


def test_a_rising_load_is_forecast_above_its_last_reading() -> None:
    rates = [1000 + 40 * t for t in range(60)]
    forecast = forecast_rate(rates, step_s=10, horizon_s=100)
    assert forecast.method == "holt-damped"
    assert forecast.peak > rates[-1] * 1.05
    assert len(forecast.path) == 10


def test_the_peak_of_a_swing_within_the_horizon_counts() -> None:
    rates = [3000 + 1000 * math.sin(t / 6) for t in range(80)]
    forecast = forecast_rate(rates, step_s=10, horizon_s=120)
    assert forecast.peak >= max(forecast.path) and forecast.peak == pytest.approx(max(forecast.path))


def test_a_short_series_still_gets_a_forecast() -> None:
    forecast = forecast_rate([1200.0, 1300.0], step_s=5, horizon_s=60)
    assert forecast.peak == pytest.approx(1300) and forecast.error is None


def test_no_readings_is_an_error() -> None:
    with pytest.raises(ValueError, match="no rate readings"):
        forecast_rate([], step_s=10, horizon_s=60)
