"""Jobs whose live readings are replayed from a recorded tune run (tests/fixtures/live_readings), each a TuneLoop
on fakes of chronos's own wrappers (its collector, pacing, retuner over the fake cluster, an in-memory journal),
steady alone or by the many-job controller.

Each job has a clock of its own that moves only with its readings (to the next reading's time once one is read), so
what a loop decides depends on its readings alone, never on when a worker ran it: the same job replayed alone and
among two hundred must decide the same, to the record. A collector may take `latency_s` per reading (a REST call and
a broker request), really slept, so the controller's workers and schedule are exercised as they would be.

The recorded reading events carry no checkpoint durations; every replayed reading gets the same one
(`CHECKPOINT_COST_S`), in both runs.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chronos.model import CheckpointSettings, JobSpec
from chronos.optimizer.model_values import Model, Observation, ProfileObservations
from chronos.optimizer.policy import TunePolicy
from chronos.tune.decided import Decided
from chronos.tune.fitting import Fitter, ModelBook
from chronos.tune.journal import DecisionRecord
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.readings import LiveReading
from chronos.tune.realization import Paced, Restarting
from chronos.tune.retune import Retuner, TunedJob
from tests.support.fake_cluster import FakeCluster
from tests.support.fake_pacing import FakePacing

RECORDED = Path(__file__).parents[1] / "fixtures" / "live_readings" / "busy_demo.json"
CHECKPOINT_COST_S = 1.5
POLICY = TunePolicy(latency_p99_ms=19_500, recovery_s=52.5, startup_grace_s=45, cooldown_s=120)
SETTINGS = LoopSettings(collect_every_s=2, decide_every_s=20)


@dataclass(frozen=True)
class Recorded:
    arms: dict[str, tuple[LiveReading, ...]]
    profile: ProfileObservations


@functools.cache
def recorded() -> Recorded:
    data = json.loads(RECORDED.read_text())
    names = data["fields"]
    arms = {}
    for arm, rows in data["arms"].items():
        readings = []
        for row in rows:
            r = dict(zip(names, row, strict=True))
            readings.append(LiveReading(
                r["at_ms"], r["running"], None if r["interval_s"] is None else round(r["interval_s"] * 1000),
                r["input_rate"], r["throughput"], r["lag"], r["p99_ms"], r["recent_p99_ms"], (CHECKPOINT_COST_S,),
                None, r["staleness_ms"]))
        arms[arm] = tuple(readings)
    grid = data["profile_grid"]
    profile = ProfileObservations(tuple(Observation(g["interval_s"], g["rate"], g["recovery_s"]) for g in grid),
                                  tuple(Observation(g["interval_s"], g["rate"], g["p99_s"] * 1000) for g in grid))
    return Recorded(arms, profile)


@functools.cache
def _fit(points: tuple[Observation, ...], seed: int, capacity: float | None, rising: bool) -> Model:
    from chronos.optimizer.models import fit_best  # scikit-learn: imported only where fitted in this process

    return fit_best(points, seed=seed, families=("linear",), capacity=capacity, rising=rising)


def cached_fit(observations: Sequence[Observation], seed: int, capacity: float | None, rising: bool) -> Model:
    """The in-process fit, once per set of points: jobs replaying the same readings fit the same models."""
    return _fit(tuple(observations), seed, capacity, rising)


@dataclass
class JobClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class ReplayedReadings:
    """The collector: the recorded readings in order, from `start`, each taking `latency_s`."""

    readings: tuple[LiveReading, ...]
    clock: JobClock
    latency_s: float = 0.0
    at: int = 0

    def collect(self, job_id: str) -> LiveReading:
        if self.latency_s:
            time.sleep(self.latency_s)
        reading = self.readings[self.at]
        self.at += 1
        if self.at < len(self.readings):  # the job's clock moves to when its next reading was taken
            self.clock.now += (self.readings[self.at].at_ms - reading.at_ms) / 1000
        return reading

    @property
    def over(self) -> bool:
        return self.at >= len(self.readings)


@dataclass
class Decisions:
    """The loop's observer: keeps what it decided (the journal's record), ignores the rest."""

    records: list[DecisionRecord] = field(default_factory=list)

    def decision(self, job: TunedJob, decided: Decided) -> None:
        self.records.append(decided.record)

    def reading(self, *args: object) -> None:
        return None

    retune = failure = outage = fit_failed = stepped = reading

    def message(self, text: str) -> None:
        return None


@dataclass
class ReplayedJob:
    """One job: its loop, its replayed collector, what it decided; a `chronos.tune.controller.Member` too."""

    name: str
    loop: TuneLoop
    readings: ReplayedReadings
    decisions: Decisions
    closed: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.loop.start()

    def step(self) -> None:
        self.loop.tick()

    def ended(self) -> str | None:
        return "its readings are all replayed" if self.readings.over else None

    def close(self) -> None:
        self.loop.finish()
        self.closed.set()


def replayed_job(index: int, latency_s: float = 0.0, length: int | None = None,
                 settings: LoopSettings = SETTINGS, fitter: Fitter | None = None) -> ReplayedJob:
    """Job `index`: one of the recorded arms (by index), from an offset of its own (so that no two neighbours replay
    the same minute), `length` readings of it."""
    data = recorded()
    arm = sorted(data.arms)[index % len(data.arms)]
    readings = data.arms[arm]
    start = (index * 7) % (len(readings) // 2)
    readings = readings[start:start + length if length is not None else None]
    name = f"job-{index:03d}"
    spec = JobSpec(name, "/jobs/replayed.py")
    cluster, clock = FakeCluster(), JobClock()
    interval_ms = readings[0].interval_ms or 10_000
    job = TunedJob(cluster.start(name, interval_ms), spec, CheckpointSettings(interval_ms))
    journal = MemoryJournal()
    retuner = Retuner(cluster, journal, wall_ms=lambda: 1_000_000 + int(clock.now * 1000), clock=clock,
                      sleep=lambda s: None, settle_timeout_s=0)
    pacing = FakePacing(journal, name)
    decisions = Decisions()
    collector = ReplayedReadings(readings, clock, latency_s)
    loop = TuneLoop(job, POLICY, collector, Paced(pacing, Restarting(retuner, follow=pacing.follow)), journal,
                    ModelBook(data.profile, fitter=fitter or cached_fit), decisions, settings, clock=clock,
                    wall_ms=lambda: readings[0].at_ms + int(clock.now * 1000))
    return ReplayedJob(name, loop, collector, decisions)


def run_alone(job: ReplayedJob) -> list[DecisionRecord]:
    """The job tuned by itself: every reading a step, one after the other."""
    job.start()
    while not job.readings.over:
        job.step()
    job.close()
    return job.decisions.records
