"""Baselines the optimizer must beat, as strategies of their own: a static interval, and Young/Daly's
optimum from the measured checkpoint cost and the mean time between failures.

Young (1974): sqrt(2 C M). Daly (2006) refines it for a cost that is not small against the MTBF:
sqrt(2 C M) (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C while C < 2M, else M. Both assume the cost of a
checkpoint is lost work; a Flink checkpoint is asynchronous, which is why they are baselines here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def young_interval_s(checkpoint_cost_s: float, mtbf_s: float) -> float:
    if checkpoint_cost_s <= 0 or mtbf_s <= 0:
        raise ValueError("checkpoint cost and MTBF must be positive")
    return math.sqrt(2 * checkpoint_cost_s * mtbf_s)


def daly_interval_s(checkpoint_cost_s: float, mtbf_s: float) -> float:
    c, m = checkpoint_cost_s, mtbf_s
    if c <= 0 or m <= 0:
        raise ValueError("checkpoint cost and MTBF must be positive")
    if c >= 2 * m:
        return m
    ratio = c / (2 * m)
    return math.sqrt(2 * c * m) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - c


def estimate_mtbf_s(failure_times_s: Sequence[float], observed_s: float) -> float | None:
    """Observed time per failure; None without a failure (an MTBF cannot be read off no failures)."""
    failures = [t for t in failure_times_s if 0 <= t <= observed_s]
    return observed_s / len(failures) if failures else None
