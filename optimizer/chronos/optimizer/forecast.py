"""The input rate over the next decision horizon, so a retune is made for the load that is coming.

Three forecasters compete on the recent series itself (rolling-origin backtest, one horizon ahead):
the last value, the recent mean, and Holt's damped-trend exponential smoothing. The one
with the least backtest error forecasts; its error travels with the forecast. On a flat or noisy
series the naive ones usually win, which is the point of measuring rather than assuming a trend.
The forecast is the largest rate expected within the horizon: recovery replays what arrived, so the
optimizer must be safe for the peak, not the average.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Forecaster = Callable[[Sequence[float], int], list[float]]


@dataclass(frozen=True)
class RateForecast:
    """`peak` is the highest forecast rate within the horizon; `error` the backtest MAPE of `method`."""

    method: str
    peak: float
    path: tuple[float, ...]
    error: float | None
    errors: tuple[tuple[str, float], ...] = ()


def _last(values: Sequence[float], steps: int) -> list[float]:
    return [float(values[-1])] * steps


def _mean(values: Sequence[float], steps: int) -> list[float]:
    return [float(np.mean(values[-6:]))] * steps


def _holt(values: Sequence[float], steps: int, history: int = 120) -> list[float]:
    """Holt's linear method with a damped trend, parameters chosen by least one-step squared error on
    a small grid. Hand-written (statsmodels has it) because statsmodels pulls pandas and scipy.stats
    into the tuner's process, ~150 MB of RSS against a 200 MB budget, for a dozen lines."""
    y = np.asarray(values[-history:], dtype=float)
    if len(y) < 6:
        return _last(values, steps)
    best: tuple[float, float, float, float] | None = None  # (sse, level, trend, phi)
    for alpha in (0.2, 0.4, 0.6, 0.8):
        for beta in (0.05, 0.1, 0.2, 0.4):
            for phi in (0.8, 0.9, 0.98):
                level, trend, sse = y[0], y[1] - y[0], 0.0
                for value in y[1:]:
                    predicted = level + phi * trend
                    sse += (value - predicted) ** 2
                    new_level = alpha * value + (1 - alpha) * predicted
                    trend = beta * (new_level - level) + (1 - beta) * phi * trend
                    level = new_level
                if best is None or sse < best[0]:
                    best = (sse, float(level), float(trend), phi)
    assert best is not None
    _, level, trend, phi = best
    damping = np.cumsum(phi ** np.arange(1, steps + 1))
    return [max(0.0, level + d * trend) for d in damping]


FORECASTERS: dict[str, Forecaster] = {"last-value": _last, "recent-mean": _mean, "holt-damped": _holt}


def _backtest(method: Forecaster, values: Sequence[float], steps: int, origins: int) -> float | None:
    """Mean relative error of the forecast peak against the actual peak one horizon ahead, from the last
    `origins` origins: the peak is what decisions use, so it is what the forecasters are judged on."""
    errors = []
    for end in range(max(6, len(values) - steps - origins + 1), len(values) - steps + 1):
        actual = max(values[end:end + steps])
        if actual > 0:
            errors.append(abs(max(method(values[:end], steps)) - actual) / actual)
    return float(np.mean(errors)) if errors else None


def forecast_rate(rates: Sequence[float], step_s: float, horizon_s: float, origins: int = 8) -> RateForecast:
    """Forecast from equally spaced rate readings (`step_s` apart), the newest last."""
    if not rates:
        raise ValueError("no rate readings to forecast from")
    steps = max(1, round(horizon_s / step_s))
    scored = {name: _backtest(method, rates, steps, origins) for name, method in FORECASTERS.items()}
    known = {name: error for name, error in scored.items() if error is not None}
    best = min(known, key=lambda name: known[name]) if known else "last-value"
    # Backtests over a few overlapping horizons are noisy; measured on step and swing profiles (bench/
    # tune_controller.py) the damped trend alone beat the pick, so it keeps the job unless clearly beaten.
    if "holt-damped" in known and known[best] > 0.9 * known["holt-damped"]:
        best = "holt-damped"
    path = FORECASTERS[best](rates, steps)
    return RateForecast(best, max(path), tuple(path), known.get(best),
                        tuple((name, round(error, 4)) for name, error in known.items()))
