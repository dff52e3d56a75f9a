"""A fitted model frozen into a table of its predictions over (log interval, rate), interpolated
bilinearly: numpy only, so the process that decides never loads the library that fitted it.

On a 160 x 64 grid the interpolation error is far below the models' held-out error (a few percent
at best), and outside the grid the nearest edge is used: a model says nothing reliable there anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from chronos.optimizer.model_values import FitReport, Prediction


@dataclass(frozen=True)
class GridModel:
    report: FitReport
    log_intervals: NDArray[np.float64]  # ascending
    rates: NDArray[np.float64]  # ascending
    medians: NDArray[np.float64]  # [interval, rate]
    residual_low: float
    residual_high: float

    def predict(self, interval_s: float, rate: float) -> Prediction:
        x = float(np.clip(np.log(interval_s), self.log_intervals[0], self.log_intervals[-1]))
        y = float(np.clip(rate, self.rates[0], self.rates[-1]))
        i = int(np.clip(np.searchsorted(self.log_intervals, x) - 1, 0, len(self.log_intervals) - 2))
        j = int(np.clip(np.searchsorted(self.rates, y) - 1, 0, len(self.rates) - 2))
        tx = (x - self.log_intervals[i]) / (self.log_intervals[i + 1] - self.log_intervals[i])
        ty = (y - self.rates[j]) / (self.rates[j + 1] - self.rates[j])
        m = self.medians
        median = float((1 - tx) * (1 - ty) * m[i, j] + tx * (1 - ty) * m[i + 1, j]
                       + (1 - tx) * ty * m[i, j + 1] + tx * ty * m[i + 1, j + 1])
        return Prediction(median, median * (1 + self.residual_low), median * (1 + self.residual_high))

