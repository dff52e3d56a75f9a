"""`chronos profile report --models` says which recovery models were set aside for predicting a recovery that falls
as the interval or the load grows, and which one is kept. The profile is a real one: the shop job's, made by the
side-by-side bench (bench/results/side_by_side_2/own), where a straight line fitted four recoveries to 3 % and
predicted a negative recovery at a 60 s interval."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import chronos

SHOP_PROFILE = Path(__file__).parents[2] / "bench" / "results" / "side_by_side_2" / "own" / "profile.db"


def test_the_report_names_the_families_set_aside_and_keeps_one_that_rises(tmp_path: Path) -> None:
    db = tmp_path / "profile.db"
    shutil.copyfile(SHOP_PROFILE, db)
    text = chronos("profile", "report", "--db", str(db), "--models")
    assert text.returncode == 0, text.stderr
    said = " ".join(text.stdout.split("recovery model:")[1].split("p99 model:")[0].split())  # however it wraps
    assert "set aside" in said and "linear" in said.split("set aside")[1]
    as_json = chronos("profile", "report", "--db", str(db), "--models", "--json")
    recovery = json.loads(as_json.stdout)["models"]["recovery"]
    assert "linear" in recovery["falling"] and recovery["family"] not in recovery["falling"]
