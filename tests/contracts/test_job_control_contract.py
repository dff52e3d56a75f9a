"""One set of assertions about `JobControl` (what the Retuner asks of a Flink job), held by the fake the
unit tests retune against and by the real `RestJobControl` on the local stack, so the fake cannot drift
from Flink: a running job reads back its interval and is live; stop-with-savepoint leaves it terminal
with that savepoint on record; a submission from the savepoint runs with the new interval; an unknown
job is UNKNOWN, and waiting for a stopped job to run is an error, not a hang; a live job's start time is on the
wall clock the Retuner compares it with when it adopts a job a crashed retune submitted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from chronos.errors import ChronosError
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobSpec
from chronos.tune.retune import JobControl
from tests.support.fake_cluster import FakeCluster

UNKNOWN_ID = "0" * 32


@dataclass
class Subject:
    control: JobControl
    spec: JobSpec
    start: Callable[[int], str]  # a running job at this interval (ms); its id
    wall_ms: Callable[[], int]  # the clock the Retuner is given beside this control


@pytest.fixture(params=["fake", "flink"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "fake":
        cluster = FakeCluster()
        spec = JobSpec("contract", "/jobs/contract.py")
        yield Subject(cluster, spec, lambda interval: cluster.start(spec.name, interval), lambda: cluster.now_ms)
        return
    from chronos.flink.job_control import RestJobControl

    demo_job = request.getfixturevalue("demo_job")
    control = RestJobControl(demo_job.flink, demo_job.submitter, demo_job.stack.savepoint_dir)
    yield Subject(_Tracked(control, demo_job.job_ids), demo_job.spec, lambda interval: demo_job.submit(interval),
                  lambda: int(time.time() * 1000))


class _Tracked:
    """The real control, with every job it submits handed to the fixture's cleanup."""

    def __init__(self, inner: JobControl, job_ids: list[str]) -> None:
        self._inner, self._ids = inner, job_ids

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._inner, name)

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str) -> str:
        job_id = self._inner.submit(spec, settings, savepoint)
        self._ids.append(job_id)
        return job_id


def _settled(control: JobControl, job_id: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while (state := control.state(job_id)) not in TERMINAL_STATES and time.monotonic() < deadline:
        time.sleep(0.2)
    return state


def test_a_live_job_s_start_time_is_read_on_the_retuner_s_wall_clock(subject: Subject) -> None:
    """Retuner._adoptable takes a live job started after the retune was decided (journaled on its wall clock) as the
    one a crashed retune submitted: a start time on another clock (or in seconds) would adopt the wrong job or none."""
    before = subject.wall_ms()
    job = subject.start(3000)
    after = subject.wall_ms()
    started = dict(subject.control.live_jobs(subject.spec.name))[job]
    assert before - 1000 <= started <= after, (before, started, after)


def test_a_running_job_reads_back_its_interval_and_is_live(subject: Subject) -> None:
    job = subject.start(3000)
    assert subject.control.state(job) == "RUNNING"
    assert subject.control.interval_ms(job) == 3000
    assert job in [jid for jid, _ in subject.control.live_jobs(subject.spec.name)]


def test_stop_with_savepoint_then_resubmit_with_another_interval(subject: Subject) -> None:
    job = subject.start(3000)
    savepoint = subject.control.stop_with_savepoint(job)
    assert savepoint and _settled(subject.control, job) == "FINISHED"
    assert subject.control.savepoint_of(job) == savepoint
    assert job not in [jid for jid, _ in subject.control.live_jobs(subject.spec.name)]
    new = subject.control.submit(subject.spec, CheckpointSettings(5000), savepoint)
    subject.control.wait_until_running(new, 120)
    assert subject.control.interval_ms(new) == 5000
    live = dict(subject.control.live_jobs(subject.spec.name))
    assert new in live and live[new] > 0, "live, with its start time"
    with pytest.raises(ChronosError):
        subject.control.wait_until_running(job, 5)


def test_an_unknown_job_is_unknown_not_an_error(subject: Subject) -> None:
    assert subject.control.state(UNKNOWN_ID) == "UNKNOWN"
