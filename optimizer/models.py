"""Models of a job's behaviour (recovery time, p99 latency, ...) against checkpoint interval and input
rate, chosen among a few scikit-learn families by cross-validation.

The error reported with every fit is held-out (mean absolute percentage error over the folds), never
the fit error: a model that memorised its profile looks perfect on it and fails at the interval it was
not shown, which is what Khaos's linear model did. Prediction intervals come from the same held-out
residuals (relative, split-conformal style), so every family gives them the same way and a decision can
be as conservative as the data says it must be.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sklearn.base import RegressorMixin, clone
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_percentage_error
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, PolynomialFeatures, StandardScaler


@dataclass(frozen=True)
class Observation:
    """One measured point: the configuration and load it was measured at, and the value."""

    interval_s: float
    rate: float
    value: float


@dataclass(frozen=True)
class Prediction:
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class FitReport:
    family: str
    held_out_mape: float
    mape_by_family: tuple[tuple[str, float], ...]
    observations: int
    folds: int


def _log_interval(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.column_stack([np.log(x[:, 0]), x[:, 1]])


def _families(seed: int) -> dict[str, Callable[[], RegressorMixin | Pipeline]]:
    log = FunctionTransformer(_log_interval)
    return {
        # The Khaos baseline: linear in interval and rate, with their interaction (and squares).
        "linear-interactions": lambda: make_pipeline(PolynomialFeatures(2), LinearRegression()),
        # The non-linear families see the interval on a log scale: profiles sample it that way.
        "gradient-boosting": lambda: make_pipeline(log, GradientBoostingRegressor(
            n_estimators=150, max_depth=2, learning_rate=0.05, subsample=0.8, random_state=seed)),
        "gaussian-process": lambda: make_pipeline(log, StandardScaler(), GaussianProcessRegressor(
            ConstantKernel() * RBF(length_scale=[1.0, 1.0]) + WhiteKernel(), normalize_y=True, random_state=seed)),
    }


def _features(intervals: Sequence[float], rates: Sequence[float]) -> NDArray[np.float64]:
    """Interval in seconds and rate in thousands of events per second."""
    return np.column_stack([np.asarray(intervals, dtype=float), np.asarray(rates, dtype=float) / 1000.0])


@dataclass(frozen=True)
class FittedModel:
    report: FitReport
    estimator: RegressorMixin | Pipeline
    residual_low: float  # relative held-out residual quantiles: value / prediction - 1
    residual_high: float

    def predict(self, interval_s: float, rate: float) -> Prediction:
        median = float(self.estimator.predict(_features([interval_s], [rate]))[0])
        return Prediction(median, median * (1 + self.residual_low), median * (1 + self.residual_high))


def fit_best(observations: Sequence[Observation], *, seed: int = 0, coverage: float = 0.8,
             folds: int = 5) -> FittedModel:
    """Cross-validate every family, keep the one with the least held-out MAPE, refit it on all data."""
    if len(observations) < 4:
        raise ValueError(f"need at least 4 observations to fit and validate a model, got {len(observations)}")
    x = _features([o.interval_s for o in observations], [o.rate for o in observations])
    y = np.asarray([o.value for o in observations], dtype=float)
    k = min(folds, len(observations))
    splits = list(KFold(n_splits=k, shuffle=True, random_state=seed).split(x))
    scores: dict[str, tuple[float, NDArray[np.float64]]] = {}
    for name, make in _families(seed).items():
        predicted = np.empty_like(y)
        for train, test in splits:
            model = clone(make()).fit(x[train], y[train])
            predicted[test] = model.predict(x[test])
        scores[name] = (float(mean_absolute_percentage_error(y, predicted)), predicted)
    best = min(scores, key=lambda name: scores[name][0])
    ratio = y / np.where(scores[best][1] == 0, np.nan, scores[best][1]) - 1
    ratio = ratio[np.isfinite(ratio)]
    tail = (1 - coverage) / 2
    low, high = (float(np.quantile(ratio, tail)), float(np.quantile(ratio, 1 - tail))) if ratio.size else (0.0, 0.0)
    report = FitReport(best, scores[best][0], tuple((n, round(s, 4)) for n, (s, _) in scores.items()),
                       len(observations), k)
    return FittedModel(report, _families(seed)[best]().fit(x, y), min(low, 0.0), max(high, 0.0))
