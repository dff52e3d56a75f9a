"""`chronos status` shows how a job really checkpoints: the interval measured between its recent completed
checkpoints (paced or not), and whether a `chronos tune` paces it (the cadence journaled for this very job)."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.cli.status_report import measured_interval_s
from chronos.cli.wiring import journaled_cadence
from chronos.flink.replies import CheckpointStats
from chronos.tune.journal import TuneJournal

REPLY = json.loads((Path(__file__).parents[1] / "fixtures" / "flink_replies" / "checkpoints.json").read_text())


def test_the_measured_interval_is_the_median_gap_between_completed_checkpoints() -> None:
    assert measured_interval_s(CheckpointStats.model_validate(REPLY)) == 5.0  # recorded: a job at 5 s
    assert measured_interval_s(CheckpointStats.model_validate({**REPLY, "history": REPLY["history"][:1]})) is None


def test_a_job_is_paced_when_the_newest_journaled_cadence_of_its_name_is_its_own(tmp_path: Path) -> None:
    db = tmp_path / "profiles.db"
    paced_at = journaled_cadence(db)
    assert paced_at("j1", "fleet") is None, "no journal yet: nothing is created"
    assert not db.exists()
    journal = TuneJournal(db)
    journal.open_cadence("fleet", "j1", None, 5000, 120_000, 1, "pace")
    journal.open_cadence("fleet", "j1", 5000, 3000, 120_000, 2, "shorter")
    journal.close()
    assert paced_at("j1", "fleet") == 3000
    assert paced_at("j2", "fleet") is None, "a job replaced since is not paced until a tuner says so"
