"""How far a model can be trusted, said in the two numbers a held-out error alone hides.

- The repeat-noise floor: a recovery measured twice at the same interval and load comes out differently (two
  kills of one profile copy, 25-47 s at one setting on a shared two-core host). No model of interval and load
  predicts a repeat better than the mean of the other repeats does, so a held-out error near that floor says "the
  measurements are this noisy", not "the model is this wrong".
- The held-out coverage of the prediction intervals: the intervals come from held-out residual quantiles; whether
  an 80 % interval covers 80 % of points it was not built from is checked leaving each point out of the quantiles
  it is judged by (judged on the same residuals, any quantile covers what it was cut from).
Pure: values in, values out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from scipy import stats

from chronos.optimizer.model_values import Observation

AT_FLOOR_MARGIN = 0.05  # a held-out error within 5 points of the noise floor is as good as the data allows
# Each point is judged by the interval cut from the others: from three, Student's t interval (residual_bounds) covers
# 80 % of a fourth on simulated normal residuals (81.7 %, 4,000 draws); from two, s is one difference. Four points,
# a ten-minute profile's latency model, are checked; the share then moves 25 points per point.
MIN_COVERAGE_POINTS = 4


def repeat_noise_floor(observations: Sequence[Observation]) -> float | None:
    """Mean absolute percentage error of predicting each repeated measurement by the mean of the other repeats at
    the same interval and load; None when nothing was measured twice at one setting."""
    groups: dict[tuple[float, float], list[float]] = defaultdict(list)
    for o in observations:
        groups[(round(o.interval_s, 3), round(o.rate))].append(o.value)
    errors = []
    for values in groups.values():
        if len(values) < 2:
            continue
        total = sum(values)
        for value in values:
            if value == 0:
                continue
            others = (total - value) / (len(values) - 1)
            errors.append(abs(value - others) / abs(value))
    return float(np.mean(errors)) if errors else None


def at_noise_floor(held_out_mape: float, floor: float | None) -> bool:
    """Whether a model's held-out error is as low as the repeats' own scatter lets any model get."""
    return floor is not None and held_out_mape <= floor + AT_FLOOR_MARGIN


def residual_bounds(ratios: Sequence[float], coverage: float) -> tuple[float, float]:
    """The interval (relative to a prediction) that covers `coverage` of new points, from held-out residual ratios:
    the order statistics a new exchangeable point falls beyond with chance `tail` each (the k-th smallest is
    exceeded with chance (n + 1 - k) / (n + 1): k = (n + 1)(1 - tail) above and (n + 1) tail below, to the nearest
    rank, as split-conformal prediction has it), widened to include 0. Plain quantiles of n residuals cover less
    than they claim for small n: interpolated between the two largest of ten, 80 % intervals covered 56-70 % held
    out on the profiles of three shipped jobs (bench/profile_trust.py). Rounded up, as the conformal
    guarantee has it, they cover more than claimed (89 % of 19 points).

    Fewer residuals than 1 / tail - 1 (nine for 80 %) have no order statistic that far out: a new point lands
    beyond the largest of n with chance 1 / (n + 1), so [smallest, largest] of four covers 60 % at most, which is
    what the profiles' 80 % intervals covered held out, on 5-6 points each, every one of them. There the
    bounds reach to Student's t prediction interval of the residuals (mean +- t(n-1) s sqrt(1 + 1/n), normal
    residuals' exact interval for one new point), when that reaches beyond the sample."""
    r = np.sort(np.asarray([x for x in ratios if np.isfinite(x)], dtype=float))
    if r.size == 0:
        return 0.0, 0.0
    tail = (1 - coverage) / 2
    above = min(int(np.round((r.size + 1) * (1 - tail))), r.size)
    below = max(int(np.round((r.size + 1) * tail)), 1)
    low, high = float(r[below - 1]), float(r[above - 1])
    if r.size >= 2 and (r.size + 1) * tail < 1 - 1e-9:  # (tolerance: 0.8 gives a tail of 0.0999...)
        half = float(stats.t.ppf(1 - tail, r.size - 1)) * float(np.std(r, ddof=1)) * math.sqrt(1 + 1 / r.size)
        mean = float(np.mean(r))
        low, high = min(low, mean - half), max(high, mean + half)
    return min(low, 0.0), max(high, 0.0)


def held_out_coverage(ratios: Sequence[float], coverage: float) -> float | None:
    """The share of held-out residual ratios (value / held-out prediction - 1) that fall inside the interval cut
    from the others (residual_bounds, as the fitted model's interval is); None with too few."""
    r = np.asarray([x for x in ratios if np.isfinite(x)], dtype=float)
    if r.size < MIN_COVERAGE_POINTS:
        return None
    inside = 0
    for i in range(r.size):
        low, high = residual_bounds(np.delete(r, i).tolist(), coverage)
        inside += int(low <= r[i] <= high)
    return inside / r.size
