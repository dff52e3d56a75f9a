"""The many-job controller on fake jobs: every job steps on its turn, one job's trouble (a step that hangs, one that
raises, a job that ended) stays its own, and every job's resources are closed on whatever path it leaves by."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from chronos.tune.controller import Controller, ControllerSettings

EVERY_S = 0.05


@dataclass
class FakeJob:
    name: str
    steps: int = 0
    started: int = 0
    closed: int = 0
    hang: threading.Event | None = None  # a step waits on it (a REST call that does not answer)
    raises: bool = False
    ends_after: int | None = None  # steps after which the job reads as cancelled from outside
    step_threads: set[str] = field(default_factory=set)
    in_step: int = 0
    most_at_once: int = 0

    def start(self) -> None:
        self.started += 1

    def step(self) -> None:
        self.in_step += 1
        self.most_at_once = max(self.most_at_once, self.in_step)
        try:
            self.steps += 1
            self.step_threads.add(threading.current_thread().name)
            if self.hang is not None:
                self.hang.wait(10)
            if self.raises:
                raise ConnectionResetError("Connection reset by peer")
        finally:
            self.in_step -= 1

    def ended(self) -> str | None:
        return "job j is CANCELED, not by chronos" if self.ends_after is not None and self.steps >= self.ends_after \
            else None

    def close(self) -> None:
        self.closed += 1


class Events:
    """The controller's FleetObserver, recording what it said."""

    def __init__(self) -> None:
        self.joins: list[str] = []
        self.leaves: list[tuple[str, str]] = []
        self.troubles: list[tuple[str, str]] = []

    def joined(self, name: str) -> None:
        self.joins.append(name)

    def left(self, name: str, why: str) -> None:
        self.leaves.append((name, why))

    def trouble(self, name: str, error: str) -> None:
        self.troubles.append((name, error))


def run_for(controller: Controller, seconds: float) -> None:
    controller.run(threading.Event(), seconds)


@contextmanager
def running(*jobs: FakeJob, workers: int = 2) -> Iterator[tuple[Controller, Events]]:
    """A controller stepping `jobs` in a thread while the block runs; stopped (and waited for) after it."""
    events = Events()
    controller = Controller(ControllerSettings(step_every_s=EVERY_S, workers=workers), events)
    for job in jobs:
        controller.add(job)
    stop = threading.Event()
    worker = threading.Thread(target=controller.run, args=(stop, 10.0))
    worker.start()
    try:
        yield controller, events
    finally:
        stop.set()
        worker.join(5)


def controller_of(jobs: list[FakeJob], workers: int) -> tuple[Controller, Events]:
    events = Events()
    controller = Controller(ControllerSettings(step_every_s=EVERY_S, workers=workers), events)
    for job in jobs:
        controller.add(job)
    return controller, events


def test_every_job_steps_on_its_turn_started_once_and_closed_at_the_end() -> None:
    jobs = [FakeJob(f"job-{i}") for i in range(10)]
    controller, events = controller_of(jobs, workers=4)
    run_for(controller, 0.5)
    assert events.joins == [job.name for job in jobs]
    for job in jobs:
        assert job.started == 1 and job.closed == 1
        assert 3 <= job.steps <= 12, job.steps  # at most ten turns in 0.5 s, one at the start
        assert job.most_at_once == 1
    assert sorted(name for name, _ in events.leaves) == sorted(job.name for job in jobs)
    assert all(why == "the controller stopped" for _, why in events.leaves)
    late = controller.lateness()
    assert late.steps == sum(job.steps for job in jobs) and late.skipped == 0


def test_a_job_whose_step_hangs_falls_behind_alone() -> None:
    events = Events()
    controller = Controller(ControllerSettings(step_every_s=EVERY_S, workers=2), events)
    release = threading.Event()
    stuck, others = FakeJob("stuck", hang=release), [FakeJob("a"), FakeJob("b"), FakeJob("c")]
    for job in (stuck, *others):
        controller.add(job)
    stop = threading.Event()
    threading.Timer(0.6, release.set).start()
    controller.run(stop, 0.8)
    assert stuck.most_at_once == 1  # never stepped twice at once: its turns were skipped while it hung
    assert stuck.steps <= 5  # one step for the 0.6 s it hung, at most four turns after
    assert all(job.steps >= stuck.steps + 3 for job in others), [job.steps for job in others]
    assert controller.lateness().skipped >= 3
    assert stuck.closed == 1


def test_a_step_that_raises_is_said_with_the_job_and_the_job_steps_on() -> None:
    events = Events()
    controller = Controller(ControllerSettings(step_every_s=EVERY_S, workers=2), events)
    broken, fine = FakeJob("broken", raises=True), FakeJob("fine")
    controller.add(broken)
    controller.add(fine)
    run_for(controller, 0.3)
    assert broken.steps >= 3 and fine.steps >= 3
    assert events.troubles and all(t == ("broken", "ConnectionResetError: Connection reset by peer")
                                   for t in events.troubles)


def test_a_job_that_ended_from_outside_is_let_go_and_said_the_rest_go_on() -> None:
    gone, stays = FakeJob("gone", ends_after=3), FakeJob("stays")
    with running(gone, stays) as (controller, events):
        time.sleep(0.4)
        assert controller.names() == ("stays",)
        assert gone.steps == 3 and gone.closed == 1
        assert events.leaves == [("gone", "job j is CANCELED, not by chronos")]
        before = stays.steps
        time.sleep(0.2)
        assert stays.steps > before
    assert stays.closed == 1 and gone.closed == 1


def test_jobs_added_and_removed_while_running_leave_the_others_untouched() -> None:
    first, removed, added = FakeJob("first"), FakeJob("removed"), FakeJob("added")
    with running(first, removed) as (controller, events):
        time.sleep(0.2)
        controller.remove("removed", "no longer in the jobs file")
        controller.add(added)
        time.sleep(0.3)
        assert controller.names() == ("first", "added")
        assert removed.closed == 1 and ("removed", "no longer in the jobs file") in events.leaves
        steps_removed = removed.steps
        time.sleep(0.2)
        assert removed.steps == steps_removed  # not stepped after it left
        assert first.started == 1 and first.closed == 0  # the others: not restarted, not closed
        assert added.steps >= 3


def test_removing_a_job_mid_step_closes_it_once_that_step_is_done() -> None:
    release = threading.Event()
    busy = FakeJob("busy", hang=release)
    with running(busy) as (controller, events):
        time.sleep(0.1)
        controller.remove("busy", "removed")
        assert busy.closed == 0  # its step still runs: never closed under it
        release.set()
        time.sleep(0.2)
        assert busy.closed == 1 and events.leaves == [("busy", "removed")]
    assert busy.closed == 1


def test_a_job_that_cannot_be_started_is_let_go_said_why_and_closed() -> None:
    class Unstartable(FakeJob):
        def start(self) -> None:
            raise LookupError("no such job 0123")

    events = Events()
    controller = Controller(ControllerSettings(step_every_s=EVERY_S, workers=2), events)
    bad, good = Unstartable("bad"), FakeJob("good")
    controller.add(bad)
    controller.add(good)
    run_for(controller, 0.3)
    assert bad.steps == 0 and bad.closed == 1
    assert ("bad", "could not start: LookupError: no such job 0123") in events.leaves
    assert good.steps >= 3


class SlowStart(FakeJob):
    def start(self) -> None:
        super().start()
        time.sleep(0.2)  # taking up a job: its REST and Kubernetes reads


def test_a_stop_waits_for_the_turns_in_flight_not_for_the_hundreds_still_queued() -> None:
    jobs: list[FakeJob] = [SlowStart(f"job-{i}") for i in range(100)]
    controller, _ = controller_of(jobs, workers=2)
    began = time.monotonic()
    run_for(controller, 0.3)
    took = time.monotonic() - began
    assert took < 1.5, f"the stop waited {took:.1f} s: 100 starts of 0.2 s on 2 workers would take 10 s"
    assert 2 <= sum(job.started for job in jobs) <= 8, "only the turns begun ran"
    assert all(job.closed == 1 for job in jobs), "every job closed, begun or not"
