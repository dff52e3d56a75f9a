"""`chronos status` shows how a job really checkpoints: the interval measured between its recent completed
checkpoints (paced or not), and whether a `chronos tune` paces it (the cadence journaled for this very job)."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.cli.status_report import measured_interval_s, realizer_of, suggested_tune
from chronos.cli.wiring import journaled_cadence
from chronos.errors import ChronosError
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


class Cluster:
    def __init__(self, offers: bool | None) -> None:
        self.offers = offers

    def offers_checkpoint_trigger(self, job_id: str) -> bool:
        if self.offers is None:
            raise ChronosError("no answer")
        return self.offers


def test_the_realizer_line_says_what_chronos_tune_would_do_and_why() -> None:
    assert realizer_of(Cluster(True), "j1", 3000) == ("paced", "chronos tune holds its checkpoints at 3 s, no restart")
    realizer, why = realizer_of(Cluster(True), "j1", None)  # no tuner now: the next one paces it
    assert realizer == "paced" and "would trigger its checkpoints" in why and "its own interval" in why
    realizer, why = realizer_of(Cluster(False), "j1", None)
    assert realizer == "restart" and "no checkpoint trigger endpoint" in why
    assert realizer_of(Cluster(None), "j1", None)[0] == "restart"


def test_the_targets_suggested_are_ones_the_job_meets_as_it_runs_now() -> None:
    # the demo job: p99 ~12 s at a 10 s interval (its windows and the commit's checkpoint are in it)
    assert suggested_tune(12_400, 10_000) == "chronos tune --latency-p99 19s --recovery 60s"
    assert suggested_tune(300, 120_000) == "chronos tune --latency-p99 1s --recovery 360s"
    assert suggested_tune(None, 10_000) is None, "nothing to go on before a p99 is measured"
