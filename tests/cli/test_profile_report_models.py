"""`chronos profile report --models` says which recovery models were set aside for predicting a recovery that falls
as the interval or the load grows, and which one is kept. The profile is a real one, kept as evidence and not
rewritten by later runs: the busy job's trial profile (bench/results/side_by_side_2/busy_trial_22k), four runs, where
gradient boosting and the Gaussian process predicted recoveries falling with the interval."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import chronos

PROFILE = Path(__file__).parents[2] / "bench" / "results" / "side_by_side_2" / "busy_trial_22k" / "profile.db"


def test_the_report_names_the_families_set_aside_and_keeps_one_that_rises(tmp_path: Path) -> None:
    db = tmp_path / "profile.db"
    shutil.copyfile(PROFILE, db)
    text = chronos("profile", "report", "--db", str(db), "--models")
    assert text.returncode == 0, text.stderr
    said = " ".join(text.stdout.split("recovery model:")[1].split("p99 model:")[0].split())  # however it wraps
    assert "set aside" in said and "gradient-boosting" in said.split("set aside")[1]
    as_json = chronos("profile", "report", "--db", str(db), "--models", "--json")
    recovery = json.loads(as_json.stdout)["models"]["recovery"]
    assert "gradient-boosting" in recovery["falling"] and recovery["family"] not in recovery["falling"]


def test_the_report_reads_each_error_against_the_noise_floor_and_checks_the_intervals(tmp_path: Path) -> None:
    """That profile killed each copy once: no setting was measured twice, so the floor is said to be unknown rather
    than the error read as the model's alone; its four points per model are each judged by the interval the other
    three cut (chronos.optimizer.model_trust.MIN_COVERAGE_POINTS), so their coverage is a share of four."""
    db = tmp_path / "profile.db"
    shutil.copyfile(PROFILE, db)
    text = chronos("profile", "report", "--db", str(db), "--models")
    said = " ".join(text.stdout.split())
    assert said.count("repeat-noise floor unknown") == 2 and said.count("its 80% intervals covered") == 2
    assert "too few points to check" not in said
    recovery = json.loads(chronos("profile", "report", "--db", str(db), "--models", "--json").stdout)["models"]["recovery"]
    assert recovery["noise_floor_mape"] is None and recovery["coverage"] == 0.8
    assert recovery["observations"] == 4 and recovery["held_out_coverage"] in (0.0, 0.25, 0.5, 0.75, 1.0)
