"""The phase model's law as a family of the tuner's recovery models: given the job's capacity it competes with
the black-box families on the same held-out error, and on recoveries that follow the law (a fixed outage, then
the backlog since the restored checkpoint drained at the spare throughput) it wins and predicts an interval it
was never shown."""

from __future__ import annotations

import itertools
import random

import pytest

from chronos.optimizer.models import Observation, fit_best

CAPACITY = 9000.0


def law(interval_s: float, rate: float) -> float:
    outage = 8.0
    return outage + 0.5 * interval_s + rate * (interval_s + outage) / (CAPACITY - rate)


def profile(rng: random.Random, intervals: tuple[float, ...]) -> list[Observation]:
    return [Observation(i, r, law(i, r) * (1 + rng.gauss(0, 0.03)))
            for i in intervals for r in (1000, 3000, 5000, 7000) for _ in range(2)]


def test_with_the_jobs_capacity_the_phase_law_competes_and_wins_on_recoveries_that_follow_it() -> None:
    fitted = fit_best(profile(random.Random(1), (2, 5, 10, 30, 60)), seed=0, capacity=CAPACITY)
    families = dict(fitted.report.mape_by_family)
    assert "phases" in families and fitted.report.family == "phases", families
    assert families["phases"] < families["linear"]


def test_it_predicts_an_interval_it_was_never_profiled_at() -> None:
    fitted = fit_best(profile(random.Random(2), (2, 5, 10, 60)), seed=0, capacity=CAPACITY, families=("phases",))
    assert fitted.predict(30, 6000).median == pytest.approx(law(30, 6000), rel=0.1)


def test_without_a_capacity_there_is_no_phase_law() -> None:
    fitted = fit_best(profile(random.Random(3), (2, 5, 10, 30)), seed=0)
    assert "phases" not in dict(fitted.report.mape_by_family)
    with pytest.raises(ValueError, match="unknown model families"):
        fit_best(profile(random.Random(3), (2, 5, 10, 30)), seed=0, families=("phases",))


def test_a_longer_interval_or_more_load_never_shortens_a_recovery_even_from_four_points() -> None:
    """A busy profile's four recoveries (bench/results/side_by_side_2/busy, 2026-12-05): fitted unconstrained, the
    law's interval term came out negative and the model predicted -57 s at 60 s."""
    busy = [Observation(4.0, 18701, 62.8), Observation(56.0, 13751, 66.7), Observation(2.0, 18701, 56.4),
            Observation(3.0, 8801, 41.7)]
    fitted = fit_best(busy, seed=0, capacity=43984, families=("phases",))
    for rate in (8800, 13750, 18700):
        curve = [fitted.predict(i, rate).median for i in (2, 5, 10, 30, 60)]
        assert all(b >= a for a, b in itertools.pairwise(curve)), curve
        assert curve[0] > 0
    for interval in (2, 10, 60):
        assert fitted.predict(interval, 18700).median >= fitted.predict(interval, 8800).median
