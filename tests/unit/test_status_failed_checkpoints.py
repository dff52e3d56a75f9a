"""`chronos status` says what its failed checkpoints were: a bare "1 failed" on a healthy young job reads
as a fault (a newcomer's first question about the demo)."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.cli.status_report import failed_why
from chronos.flink.replies import CheckpointStats

REPLY = json.loads((Path(__file__).parents[1] / "fixtures" / "flink_replies" / "checkpoints.json").read_text())


def test_a_failure_flink_never_started_is_said_to_be_the_young_jobs_first_trigger() -> None:
    stats = CheckpointStats.model_validate(REPLY)  # recorded: 8 completed, 1 failed, no failed statistics
    assert stats.counts.failed == 1 and stats.latest.failed is None
    why = failed_why(stats)
    assert why is not None and "not all running yet" in why


def test_a_failure_with_statistics_shows_flinks_message() -> None:
    reply = {**REPLY, "latest": {**REPLY["latest"], "failed": {
        "className": "failed", "id": 12, "status": "FAILED", "failure_timestamp": 1796222199000,
        "failure_message": "Checkpoint expired before completing."}}}
    assert failed_why(CheckpointStats.model_validate(reply)) == "latest #12: Checkpoint expired before completing."


def test_no_failure_no_words() -> None:
    reply = {**REPLY, "counts": {**REPLY["counts"], "failed": 0}}
    assert failed_why(CheckpointStats.model_validate(reply)) is None
