"""Fifty and two hundred jobs, their live readings replayed from a recorded tune run, tuned by one controller: each
job decides exactly what it decides tuned alone on the same readings (every decision record, to the field), whatever
worker ran its steps and however the others' steps interleaved; and the controller keeps every job on its turn."""

from __future__ import annotations

import threading

import pytest

from chronos.tune.controller import Controller, ControllerSettings
from tests.support.replayed_fleet import ReplayedJob, replayed_job, run_alone


class AllReplayed:
    """The controller's observer: the run ends once every job has been let go."""

    def __init__(self, jobs: int) -> None:
        self.why: dict[str, str] = {}
        self.troubles: list[tuple[str, str]] = []
        self._jobs = jobs
        self.done = threading.Event()

    def joined(self, name: str) -> None:
        return None

    def left(self, name: str, why: str) -> None:
        self.why[name] = why
        if len(self.why) == self._jobs:
            self.done.set()

    def trouble(self, name: str, error: str) -> None:
        self.troubles.append((name, error))


# (jobs, readings each: one every 2 s, a decision every 20 s of them)
@pytest.mark.parametrize(("count", "readings"), [(50, 140), (200, 50)])
def test_every_job_decides_as_it_does_alone(count: int, readings: int) -> None:
    alone = {job.name: run_alone(job) for job in (replayed_job(i, length=readings) for i in range(count))}
    assert sum(len(records) for records in alone.values()) >= count * 2, "enough decisions to compare"
    assert any(r.action != "keep" for records in alone.values() for r in records), "and some that act"

    jobs: list[ReplayedJob] = [replayed_job(i, latency_s=0.001, length=readings) for i in range(count)]
    said = AllReplayed(count)
    controller = Controller(ControllerSettings(step_every_s=0.005, workers=8), said)
    for job in jobs:
        controller.add(job)
    controller.run(said.done, 300)

    assert said.troubles == []
    assert said.why == {job.name: "its readings are all replayed" for job in jobs}
    for job in jobs:
        assert job.decisions.records == alone[job.name], job.name
        assert job.closed.is_set()
    assert controller.lateness().steps == sum(len(job.readings.readings) for job in jobs), "one turn a reading"
