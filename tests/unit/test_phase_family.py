"""The phase model's law as a family of the tuner's recovery models: given the job's capacity it competes with
the black-box families on the same held-out error, and on recoveries that follow the law (a fixed outage, then
the backlog since the restored checkpoint drained at the spare throughput) it wins and predicts an interval it
was never shown."""

from __future__ import annotations

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
