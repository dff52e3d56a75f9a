"""Stop-with-savepoint and resubmission with a new interval, on the real stack, losing nothing."""

from __future__ import annotations

import time

from chronos.flink.rest import FlinkRestClient
from chronos.flink.restart import restart_with_settings
from chronos.flink.submit import RestSubmitter
from chronos.jobs.output import output_totals
from chronos.model import CheckpointSettings
from tests.conftest import BackgroundLoad, DemoJob, wait_until


def test_resubmitted_job_has_the_new_interval_and_restored_from_the_savepoint(
    demo_job: DemoJob, flink: FlinkRestClient, submitter: RestSubmitter
) -> None:
    old = demo_job.submit(interval_ms=2000)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=500, duration_s=30)
    try:
        wait_until(lambda: flink.checkpoints(old).counts.completed >= 1, 30, what="a first checkpoint")
        journaled: list[str] = []
        result = restart_with_settings(flink, submitter, old, demo_job.spec, CheckpointSettings(5000),
                                       demo_job.stack.savepoint_dir, on_savepoint=journaled.append)
        demo_job.job_ids.append(result.new_job_id)
        assert journaled == [result.savepoint], "the savepoint is on record before resubmission"
        assert flink.job(old).state == "FINISHED"
        assert flink.checkpoint_config(result.new_job_id).interval == 5000
        restored = flink.checkpoints(result.new_job_id).latest.restored
        assert restored is not None and restored.is_savepoint
        assert restored.external_path == result.savepoint
        assert result.savepoint_s <= result.submitted_s <= result.running_s
    finally:
        load.halt()


def test_exactly_once_across_a_restart(demo_job: DemoJob, flink: FlinkRestClient, submitter: RestSubmitter) -> None:
    """N bounded input events; the job is retuned midway; committed output adds up to N per key."""
    n = 100_000
    first = demo_job.submit(interval_ms=2000)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=8000, count=n,
                          vehicles=500, close_windows=True)
    wait_until(lambda: flink.checkpoints(first).counts.completed >= 1, 30, what="a first checkpoint")
    time.sleep(3)
    result = restart_with_settings(flink, submitter, first, demo_job.spec, CheckpointSettings(3000),
                                   demo_job.stack.savepoint_dir)
    demo_job.job_ids.append(result.new_job_id)
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
