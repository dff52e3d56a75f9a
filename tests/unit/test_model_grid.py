"""Models fitted in a child process come back as a numpy table that predicts like the model did."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chronos.optimizer.models import fit_best, fit_grid
from chronos.tune.fitting import fit_in_child
from tests.support.truths import replay_bound


def test_the_table_predicts_what_the_model_predicts() -> None:
    observations = replay_bound()
    model, grid = fit_best(observations, seed=0), fit_grid(observations, seed=0)
    assert grid.report == model.report
    for interval, rate in ((2, 1000), (7.5, 2500), (33, 4200), (60, 6000)):
        exact, tabled = model.predict(interval, rate), grid.predict(interval, rate)
        assert tabled.median == pytest.approx(exact.median, rel=0.01)
        assert tabled.high == pytest.approx(exact.high, rel=0.01) and tabled.low <= tabled.median <= tabled.high


def test_outside_the_table_the_nearest_edge_answers() -> None:
    grid = fit_grid(replay_bound(), seed=0)
    assert grid.predict(0.01, 1000).median == pytest.approx(grid.predict(0.2, 1000).median)
    assert grid.predict(10, 10**9).median == pytest.approx(grid.predict(10, float(grid.rates[-1])).median)


def test_fitting_in_a_child_returns_the_same_table() -> None:
    observations = replay_bound()
    child = fit_in_child(observations, 0)
    assert child.report == fit_grid(observations, seed=0).report
    assert child.predict(12, 4000).median == pytest.approx(fit_grid(observations, seed=0).predict(12, 4000).median)


def test_the_tuner_never_loads_scikit_learn_not_even_to_fit() -> None:
    code = ("import sys, chronos.cli.main, chronos.cli.tune_commands, chronos.cli.wiring, chronos.tune.loop, "
            "chronos.optimizer.evaluate, chronos.optimizer.decide\n"
            "from chronos.tune.fitting import fit_in_child\n"
            "from chronos.optimizer.model_values import Observation\n"
            "points = [Observation(i, r, 15 + i * r / 2000) for i in (2, 5, 10, 30) for r in (1000, 5000)]\n"
            "model = fit_in_child(points, 0)\n"
            "assert model.predict(10, 2000).median > 0\n"
            "print(sorted(m for m in ('sklearn', 'scipy', 'pandas', 'statsmodels') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
