"""Ground truths of recovery and latency that the optimizer's tests fit and decide against."""

from __future__ import annotations

import random

from chronos.optimizer.models import Observation


def replay_bound(seed: int = 1, noise: float = 0.03) -> list[Observation]:
    """Recovery = detection + restart + replay of interval x rate at a drain rate, with noise."""
    rng = random.Random(seed)
    out = []
    for interval in (2, 3, 5, 8, 10, 15, 20, 30, 45, 60):
        for rate in (1000, 3000, 6000):
            truth = 15 + interval * rate / 2000
            out.append(Observation(interval, rate, truth * (1 + rng.gauss(0, noise))))
    return out


def recovery_truth(interval_s: float, rate: float, fixed_s: float = 15.0, drain_rate: float = 2000.0) -> float:
    """Fixed phases (detection, restart) and the replay of an interval's input at `drain_rate` records/s."""
    return fixed_s + interval_s * rate / drain_rate


def latency_truth(interval_s: float, rate: float) -> float:
    return 300 + 6000 / interval_s + rate / 100
