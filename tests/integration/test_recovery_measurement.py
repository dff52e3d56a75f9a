"""Recovery measured on the real stack: TaskManagers killed at worst-case and best-case timing."""

from __future__ import annotations

import pytest

from chronos.chaos.measure import measure_recovery
from chronos.chaos.timing import BestCase, WorstCase
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.output import output_totals
from chronos.signals.live import LiveSignals
from chronos.stack.faults import KillTaskManager
from tests.conftest import BackgroundLoad, DemoJob, wait_until

pytestmark = pytest.mark.long(2)


def _live(demo_job: DemoJob, flink: FlinkRestClient, job_id: str) -> LiveSignals:
    s = demo_job.settings
    return LiveSignals(flink, job_id, s.name, demo_job.stack.bootstrap, s.input_topic, s.output_topic,
                       demo_job.stack.prometheus_urls)


def test_worst_case_kill_is_measured_replays_clearly_more_than_best_case_and_loses_nothing(
        demo_job: DemoJob, flink: FlinkRestClient) -> None:
    """The physics the optimizer relies on: a fault just before a checkpoint replays most of an interval,
    one just after a checkpoint almost nothing. Same job, same 10 s interval, same 2k events/s; both
    faults are TaskManager kills, both recoveries measured, and the output stays exactly-once across both."""
    stack = demo_job.stack
    job_id = demo_job.submit(interval_ms=10_000)
    load = BackgroundLoad(stack.bootstrap, demo_job.settings.input_topic, rate=2000, duration_s=900, vehicles=300,
                          close_windows=True)
    signals = _live(demo_job, flink, job_id)
    try:
        wait_until(lambda: flink.checkpoints(job_id).counts.completed >= 2, 40, what="checkpoints before the faults")
        # A 15 s warm-up is 30 samples to learn the steady state from (the warm-up grows if they are too few).
        worst = measure_recovery(signals, KillTaskManager(stack.stack_dir_path), WorstCase(before_s=3.0),
                                 warmup_s=15, hold_s=5, timeout_s=180)
        best = measure_recovery(signals, KillTaskManager(stack.stack_dir_path), BestCase(after_s=1.0),
                                warmup_s=15, hold_s=5, timeout_s=180)
    finally:
        signals.close()
        load.halt()
    print("WORST", worst)  # shown with -s: the figures behind the assertions
    print("BEST", best)
    m = worst
    assert m.detected_ms is not None and m.running_ms is not None and m.recovered_ms is not None, m
    assert m.fault.injected_wall_ms < m.detected_ms < m.running_ms <= m.recovered_ms
    assert m.recovery_s is not None and 0 < m.recovery_s < 180
    assert m.checkpoint_age_at_fault_ms == pytest.approx(7000, abs=1500), "fired ~3 s before the next checkpoint"
    assert m.restored_checkpoint_id is not None
    assert m.strategy == "WorstCase" and m.interval_ms == 10_000
    assert best.recovery_s is not None and best.strategy == "BestCase"
    # Replay is read just before each fault, so it does not depend on how the recovery went.
    assert worst.records_reprocessed is not None and best.records_reprocessed is not None
    assert worst.records_reprocessed > 8_000, "about 7 s of 2k events/s"
    assert worst.records_reprocessed > 3 * best.records_reprocessed
    assert best.checkpoint_age_at_fault_ms is not None and worst.checkpoint_age_at_fault_ms > best.checkpoint_age_at_fault_ms

    report = load.report
    assert report is not None
    totals = output_totals(stack.bootstrap, demo_job.settings.output_topic, "vehicle", report.sent, timeout_s=120)
    assert dict(totals) == dict(report.per_vehicle), "exactly-once across both faults"
