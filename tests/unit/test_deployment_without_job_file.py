"""A FlinkDeployment is tuned without a job file: the operator owns its spec (a retune patches the deployment, no
program needed here); chronos names the job as Flink runs it and, knowing none of its topics, reads its signals
from Flink's metrics (the record has no io)."""

from __future__ import annotations

from pathlib import Path

from chronos.cli.wiring import deployment_to_tune
from chronos.flink.replies import CheckpointConfigReply, JobDetail
from chronos.tune.journal import TuneJournal
from tests.support.fake_operator import FakeOperator, job_id


class Flink:
    def job(self, job_id: str) -> JobDetail:
        return JobDetail.model_validate({"jid": "c" * 32, "name": "orders enrichment", "state": "RUNNING",
                                         "start-time": 1, "now": 2, "vertices": []})

    def checkpoint_config(self, job_id: str) -> CheckpointConfigReply:
        raise AssertionError("the deployment's own configuration says the interval")


def test_a_deployment_without_a_job_file_is_named_as_flink_runs_it_and_has_no_io(tmp_path: Path) -> None:
    journal = TuneJournal(tmp_path / "chronos.db")
    try:
        record, realizer = deployment_to_tune(Flink(), "fleet", "streaming", None, journal, api=FakeOperator())
    finally:
        journal.close()
    assert record.job_id == job_id(0) and record.spec.name == "orders enrichment" and record.io is None
    assert record.settings.interval_ms == 30_000 and realizer.check().job_id == job_id(0)
