"""Recovery beyond the interval on the real stack: the settings chronos proposes (heartbeats, restart delay, a spare
TaskManager), put in force with `chronos stack reconfigure` (jobs stopped with savepoints and resubmitted), find a
killed TaskManager and reschedule the job clearly sooner than Flink's defaults, paired on the same stack and job;
a pause the measured ones allow does not fail the job over, a pause beyond the timeout does and recovers; and the
output stays exactly-once across all of it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.output import output_totals
from chronos.model import CheckpointSettings
from chronos.optimizer.detection import check_timeout
from chronos.signals.taskmanager_pauses import watch_pauses
from chronos.stack.faults import KillTaskManager, PauseTaskManager
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.stack.local_stack import restart_flink
from chronos.stack.state import StackState, load_state
from tests.conftest import BackgroundLoad, DemoJob, wait_until
from tests.support.cli import chronos
from tests.support.quiesce import quiesce

pytestmark = pytest.mark.long(4)

PROPOSED = ["--set", "heartbeat.interval=1s", "--set", "heartbeat.timeout=5s",
            "--set", "restart-strategy.fixed-delay.delay=500ms", "--spare-taskmanagers", "1"]


@pytest.fixture()
def reset_after(stack: StackState, flink: FlinkRestClient) -> Iterator[None]:
    """Whatever a test puts in force, the next test on this worker's stack finds the settings it started with."""
    before = load_state(stack.stack_dir_path)
    assert before is not None
    yield
    quiesce(flink)
    now = load_state(stack.stack_dir_path)
    if now is not None and (now.flink_settings, now.spare_taskmanagers) != (before.flink_settings,
                                                                          before.spare_taskmanagers):
        restart_flink(stack.stack_dir_path, before.flink_settings, before.spare_taskmanagers)


@dataclass(frozen=True)
class Recovery:
    detect_s: float  # the kill -> the job is no longer all RUNNING
    running_s: float  # the kill -> every task RUNNING again


def kill_and_time(flink: FlinkRestClient, stack: StackState, job_id: str) -> Recovery:
    wait_until(lambda: flink.checkpoints(job_id).counts.completed >= 2, 60, what="checkpoints before the kill")
    KillTaskManager(stack.stack_dir_path).inject()  # the one running the job; replaced at once, as a cluster manager would
    start = time.monotonic()
    detect = wait_until(lambda: not flink.job(job_id).all_running and time.monotonic() - start, 90, interval_s=0.1,
                        what="Flink to find the loss")
    running = wait_until(lambda: flink.job(job_id).all_running and time.monotonic() - start, 120, interval_s=0.1,
                         what="every task RUNNING again")
    return Recovery(detect, running)


def track(demo_job: DemoJob, job_id: str) -> None:
    """The job as `chronos job submit` would have recorded it, so a reconfiguration can resubmit it."""
    JobRecordStore(demo_job.stack.stack_dir_path / "jobs").save(JobRecord(job_id, demo_job.spec, CheckpointSettings(2000)))


def reconfigure(stack: StackState, *args: str) -> dict[str, object]:
    done = chronos("stack", "reconfigure", *args, "--pause-watch", "5s", "--json", "--stack-dir", stack.stack_dir,
                   timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def assert_exactly_once(demo_job: DemoJob, load: BackgroundLoad, n: int) -> None:
    report = load.join(timeout_s=240)
    totals = output_totals(demo_job.stack.bootstrap, demo_job.settings.output_topic, "vehicle", n, timeout_s=120)
    assert dict(totals) == dict(report.per_vehicle), "exactly-once across every kill, pause and restart"


def test_a_kill_is_found_and_rescheduled_clearly_sooner_at_the_proposed_settings_than_at_flinks_defaults(
    demo_job: DemoJob, flink: FlinkRestClient, stack: StackState, reset_after: None
) -> None:
    restart_flink(stack.stack_dir_path, (), 0)  # Flink's defaults, whatever this worker's stack runs with
    job_id = demo_job.submit(interval_ms=2000)
    track(demo_job, job_id)
    n = 60_000
    load = BackgroundLoad(stack.bootstrap, demo_job.settings.input_topic, rate=400, count=n, vehicles=100,
                          close_windows=True)
    try:
        defaults = kill_and_time(flink, stack, job_id)
        applied = reconfigure(stack, *PROPOSED)
        moved = applied["jobs"]
        assert isinstance(moved, list) and [j["outcome"] for j in moved] == ["verified"]
        new_id = str(moved[0]["new_job_id"])
        demo_job.job_ids.append(new_id)
        config = flink.jobmanager_config()
        assert (config.get("heartbeat.interval"), config.get("heartbeat.timeout")) == ("1s", "5s"), config
        assert len(flink.taskmanagers()) == 2, "the spare TaskManager registered"
        proposed = kill_and_time(flink, stack, new_id)
    except BaseException:
        load.halt()
        raise
    assert proposed.detect_s < defaults.detect_s / 2, (defaults, proposed)
    assert proposed.running_s < defaults.running_s / 2, (defaults, proposed)
    assert_exactly_once(demo_job, load, n)


def test_a_pause_the_measured_ones_allow_is_ridden_out_and_one_beyond_the_timeout_fails_over_and_recovers(
    demo_job: DemoJob, flink: FlinkRestClient, stack: StackState, reset_after: None
) -> None:
    job_id = demo_job.submit(interval_ms=2000)
    track(demo_job, job_id)
    n = 40_000
    load = BackgroundLoad(stack.bootstrap, demo_job.settings.input_topic, rate=400, count=n, vehicles=100,
                          close_windows=True)
    try:
        job_id = paused_twice(demo_job, flink, stack)
    except BaseException:
        load.halt()
        raise
    assert_exactly_once(demo_job, load, n)


def paused_twice(demo_job: DemoJob, flink: FlinkRestClient, stack: StackState) -> str:
    applied = reconfigure(stack, *PROPOSED)
    moved = applied["jobs"]
    assert isinstance(moved, list)
    job_id = str(moved[0]["new_job_id"])
    demo_job.job_ids.append(job_id)
    wait_until(lambda: flink.checkpoints(job_id).counts.completed >= 2, 60, what="checkpoints at the new settings")
    evidence, samples = watch_pauses(flink, 10, heartbeat_interval_s=1.0)
    assert samples >= 10
    check_timeout(5.0, evidence)  # the proposed timeout stands against what was measured
    allowed = max(3 * evidence.longest_s, 1.0)
    assert allowed < 5.0
    failures = len(flink.exceptions(job_id).exception_history.entries)
    PauseTaskManager(stack.stack_dir_path, seconds=allowed).inject()
    time.sleep(6)  # past the timeout, had the pause tripped it
    assert flink.job(job_id).all_running and len(flink.exceptions(job_id).exception_history.entries) == failures, \
        f"a pause of {allowed:.2f} s (3x the longest measured, {evidence.longest_s} s) failed the job over"
    PauseTaskManager(stack.stack_dir_path, seconds=8.0).inject()  # beyond the 5 s timeout
    wait_until(lambda: len(flink.exceptions(job_id).exception_history.entries) > failures, 30,
               what="the pause beyond the timeout to fail the job over")
    wait_until(lambda: flink.job(job_id).all_running, 120, what="the job running again")
    return job_id
