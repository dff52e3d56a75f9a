"""One set of assertions about `CheckpointTrigger` (what the pacer asks of Flink), held by the fake the pacer's unit
tests run against and by the real `RestCheckpointTrigger` on the local stack, so the fake cannot drift from Flink:
a running job's view says it runs and which checkpoint completed last; a trigger returns an id whose outcome comes
out completed with a newer checkpoint, triggered no earlier than the trigger on the view's wall clock; a trigger Flink
does not know reads failed, not in progress forever."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.stack.state import StackState
from chronos.tune.pacer import CheckpointTrigger, TriggerOutcome
from tests.conftest import DemoJob
from tests.support.fake_checkpoint_trigger import FakeJob

UNKNOWN_TRIGGER = "f" * 32


@dataclass
class Subject:
    trigger: CheckpointTrigger
    job_id: str  # a job RUNNING with every task, one checkpoint completed at least
    wait: Callable[[float], None]  # let this much time pass (a fake's clock, or the real one)


@pytest.fixture(scope="module")
def running_demo_job(stack: StackState) -> Iterator[tuple[RestCheckpointTrigger, str]]:
    """One demo job for the module's real side: no assertion here changes it (a triggered checkpoint only adds one),
    and a submission with its first checkpoint is most of each test's time."""
    with FlinkRestClient(stack.rest_url) as flink:
        demo_job = DemoJob(stack, flink, RestSubmitter(flink, find_distribution().python_jar))
        try:
            job_id = demo_job.submit(3_600_000)  # its own checkpoints an hour apart: every one here is triggered
            trigger = RestCheckpointTrigger(flink)
            deadline = time.monotonic() + 60
            while not trigger.pacing_view(job_id).running and time.monotonic() < deadline:
                time.sleep(0.5)
            first = trigger.trigger_checkpoint(job_id)
            assert _outcome(trigger, job_id, first, time.sleep).state == "completed"
            yield trigger, job_id
        finally:
            demo_job.cancel_all()


@pytest.fixture(params=["fake", "flink"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "fake":
        job = FakeJob(now=1_000_000, completed=[(1, 990_000)])
        yield Subject(job, "j1", job.wait)
        return
    trigger, job_id = request.getfixturevalue("running_demo_job")
    yield Subject(trigger, job_id, time.sleep)


def _outcome(trigger: CheckpointTrigger, job_id: str, trigger_id: str, wait: Callable[[float], None],
             timeout_s: float = 60) -> TriggerOutcome:
    waited = 0.0
    while (outcome := trigger.trigger_outcome(job_id, trigger_id)).state == "in-progress" and waited < timeout_s:
        wait(0.25)
        waited += 0.25
    return outcome


def test_a_running_job_s_view_says_it_runs_and_names_its_last_completed_checkpoint(subject: Subject) -> None:
    view = subject.trigger.pacing_view(subject.job_id)
    assert view.running and view.in_progress == 0
    assert view.last_completed_id is not None and view.last_completed_trigger_ms is not None
    assert view.last_completed_trigger_ms <= view.at_ms


def test_a_trigger_completes_a_newer_checkpoint_the_view_then_shows(subject: Subject) -> None:
    before = subject.trigger.pacing_view(subject.job_id)
    trigger_id = subject.trigger.trigger_checkpoint(subject.job_id)
    assert len(trigger_id) == 32 and int(trigger_id, 16) >= 0
    outcome = _outcome(subject.trigger, subject.job_id, trigger_id, subject.wait)
    assert outcome.state == "completed" and outcome.checkpoint_id is not None
    assert before.last_completed_id is not None and outcome.checkpoint_id > before.last_completed_id
    after = subject.trigger.pacing_view(subject.job_id)
    assert after.last_completed_id is not None and after.last_completed_id >= outcome.checkpoint_id
    assert after.last_completed_trigger_ms is not None and after.last_completed_trigger_ms >= before.at_ms, \
        "the checkpoint's trigger time is on the view's clock, after the view before it"


def test_a_trigger_flink_does_not_know_reads_failed(subject: Subject) -> None:
    outcome = subject.trigger.trigger_outcome(subject.job_id, UNKNOWN_TRIGGER)
    assert outcome.state == "failed" and outcome.failure
