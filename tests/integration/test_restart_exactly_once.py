"""Stop-with-savepoint and resubmission with a new interval through the journaled Retuner (the one path of
`chronos tune` and `chronos job retune`), on the real stack, losing nothing."""

from __future__ import annotations

import time
from pathlib import Path

from chronos.flink.job_control import RestJobControl
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.output import output_totals
from chronos.model import CheckpointSettings
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob
from tests.conftest import BackgroundLoad, DemoJob, wait_until


def retuner(demo_job: DemoJob, flink: FlinkRestClient, submitter: RestSubmitter, db: Path) -> Retuner:
    return Retuner(RestJobControl(flink, submitter, demo_job.stack.savepoint_dir), TuneJournal(db))


def test_resubmitted_job_has_the_new_interval_and_restored_from_the_savepoint(
    demo_job: DemoJob, flink: FlinkRestClient, submitter: RestSubmitter, tmp_path: Path
) -> None:
    old = demo_job.submit(interval_ms=2000)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=500, duration_s=30)
    try:
        wait_until(lambda: flink.checkpoints(old).counts.completed >= 1, 30, what="a first checkpoint")
        journaled: list[str | None] = []

        class Watched(Retuner):  # what the journal holds when the submission starts
            def _submit(self, entry, job):  # type: ignore[no-untyped-def]
                journaled.append(journal.retune(entry.retune_id).savepoint)
                return super()._submit(entry, job)

        journal = TuneJournal(tmp_path / "journal.db")
        outcome = Watched(RestJobControl(flink, submitter, demo_job.stack.savepoint_dir), journal).retune(
            TunedJob(old, demo_job.spec, CheckpointSettings(2000)), 5000, "test")
        new = outcome.job.job_id
        demo_job.job_ids.append(new)
        assert outcome.outcome == "verified" and journaled == [outcome.entry.savepoint], \
            "the savepoint is on record before resubmission"
        assert flink.job(old).state == "FINISHED"
        assert flink.checkpoint_config(new).interval == 5000
        restored = flink.checkpoints(new).latest.restored
        assert restored is not None and restored.is_savepoint
        assert restored.external_path == outcome.entry.savepoint
        assert outcome.savepoint_s is not None and outcome.submitted_s is not None and outcome.downtime_s is not None
        assert outcome.savepoint_s <= outcome.submitted_s <= outcome.downtime_s
    finally:
        load.halt()


def test_exactly_once_across_a_restart(demo_job: DemoJob, flink: FlinkRestClient, submitter: RestSubmitter,
                                       tmp_path: Path) -> None:
    """N bounded input events; the job is retuned midway; committed output adds up to N per key."""
    n = 100_000
    first = demo_job.submit(interval_ms=2000)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=8000, count=n,
                          vehicles=500, close_windows=True)
    wait_until(lambda: flink.checkpoints(first).counts.completed >= 1, 30, what="a first checkpoint")
    time.sleep(3)
    outcome = retuner(demo_job, flink, submitter, tmp_path / "journal.db").retune(
        TunedJob(first, demo_job.spec, CheckpointSettings(2000)), 3000, "test")
    demo_job.job_ids.append(outcome.job.job_id)
    report = load.join(timeout_s=120)
    assert report.sent == n
    assert load.report is not None and load.report.sent == n

    per_vehicle = output_totals(demo_job.stack.bootstrap, demo_job.settings.output_topic, "vehicle",
                                expected_total=n, timeout_s=120)
    expected = dict(report.per_vehicle)
    missing = {k: v - per_vehicle.get(k, 0) for k, v in expected.items() if per_vehicle.get(k, 0) < v}
    extra = {k: per_vehicle[k] - expected.get(k, 0) for k in per_vehicle if per_vehicle[k] > expected.get(k, 0)}
    assert not missing, f"lost events for {len(missing)} vehicles, e.g. {list(missing.items())[:3]}"
    assert not extra, f"duplicated events for {len(extra)} vehicles, e.g. {list(extra.items())[:3]}"
    assert sum(per_vehicle.values()) == n
    per_region = output_totals(demo_job.stack.bootstrap, demo_job.settings.output_topic, "region",
                               expected_total=n, timeout_s=30)
    assert sum(per_region.values()) == n
