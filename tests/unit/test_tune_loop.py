"""The control loop on a fake cluster and a scripted job: when it retunes, when it only advises, how a
live failure becomes a model point, and that a journaled half-retune is finished before anything else.
The real-stack version of each is in tests/integration/test_tune.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chronos.model import CheckpointSettings, JobSpec
from chronos.optimizer.decide import Decision
from chronos.optimizer.evaluate import Evaluation, JobModels
from chronos.optimizer.model_values import Observation
from chronos.optimizer.models import fit_best
from chronos.optimizer.policy import TunePolicy
from chronos.tune.failures import ObservedFailure
from chronos.tune.fitting import ModelBook, ProfileObservations
from chronos.tune.journal import TuneJournal
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.readings import LiveReading
from chronos.tune.retune import RetuneOutcome, Retuner, TunedJob
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_optimizer_decisions import latency_truth, recovery_truth

SPEC = JobSpec("vehicle-stats", "/jobs/vehicle_stats_job.py")
POLICY = TunePolicy(latency_p99_ms=1500, recovery_s=60, startup_grace_s=60, cooldown_s=300)


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class ScriptedJob:
    """Readings of whatever job the fake cluster runs: rate from the script, latency from the truth."""

    cluster: FakeCluster
    clock: Clock
    rate: float = 2000.0
    down_between: tuple[float, float] | None = None  # clock seconds the job is failing

    def collect(self, job_id: str) -> LiveReading:
        interval_ms = self.cluster.jobs[job_id].interval_ms
        at_ms = int(self.clock.now * 1000) + 1_000_000
        down = self.down_between is not None and self.down_between[0] <= self.clock.now < self.down_between[1]
        p99 = latency_truth(interval_ms / 1000, self.rate)
        return LiveReading(at_ms, not down, interval_ms, self.rate, None if down else self.rate, 50.0, p99,
                           None if down else p99, (0.5,), None)


@dataclass
class Recorder:
    decisions: list[Decision] = field(default_factory=list)
    retunes: list[RetuneOutcome] = field(default_factory=list)
    failures: list[ObservedFailure] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def reading(self, *args: object) -> None:
        return None

    def decision(self, job: TunedJob, decision: Decision, evaluation: Evaluation) -> None:
        self.decisions.append(decision)

    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None:
        self.retunes.append(outcome)

    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None:
        self.failures.append(failure)

    def message(self, text: str) -> None:
        self.messages.append(text)


def profile() -> ProfileObservations:
    grid = [(i, r) for i in (1, 2, 3, 5, 8, 12, 20, 30, 45, 60, 90, 120) for r in (1000, 2500, 5000, 8000)]
    return ProfileObservations(tuple(Observation(i, r, recovery_truth(i, r)) for i, r in grid),
                               tuple(Observation(i, r, latency_truth(i, r)) for i, r in grid))


def in_process(observations, seed):  # type: ignore[no-untyped-def]
    return fit_best(observations, seed=seed)


@pytest.fixture(scope="module")
def book() -> ModelBook:
    return ModelBook(profile(), fitter=in_process)


def make_loop(tmp_path: Path, book: ModelBook, *, dry_run: bool = False, interval_ms: int = 30_000):  # type: ignore[no-untyped-def]
    cluster, clock = FakeCluster(), Clock()
    job = TunedJob(cluster.start(SPEC.name, interval_ms), SPEC, CheckpointSettings(interval_ms))
    journal = TuneJournal(tmp_path / "chronos.db")
    scripted, recorder = ScriptedJob(cluster, clock), Recorder()
    retuner = Retuner(cluster, journal, wall_ms=cluster.tick, clock=clock, sleep=lambda s: None, settle_timeout_s=0)
    loop = TuneLoop(job, POLICY, scripted, retuner, journal, book, recorder,
                    LoopSettings(collect_every_s=5, decide_every_s=30, dry_run=dry_run), clock=clock)
    return loop, cluster, clock, scripted, recorder, journal


def run_for(loop: TuneLoop, clock: Clock, seconds: float) -> None:
    end = clock.now + seconds
    while clock.now < end:
        loop.step()
        clock.now += 5


def test_a_load_step_leads_to_one_retune_to_a_shorter_interval(tmp_path: Path, book: ModelBook) -> None:
    loop, cluster, clock, scripted, recorder, journal = make_loop(tmp_path, book)
    run_for(loop, clock, 200)
    assert not recorder.retunes, "2,000 ev/s at 30 s meets both targets"
    scripted.rate = 6000
    run_for(loop, clock, 200)
    assert len(recorder.retunes) == 1, [d.explain() for d in recorder.decisions]
    new = recorder.retunes[0].job
    assert new.settings.interval_ms < 30_000 and cluster.live() == [new.job_id]
    assert recovery_truth(new.settings.interval_ms / 1000, 6000) <= 60
    assert loop.state.job == new
    assert journal.retunes()[-1].step == "verified"
    actions = [d.action for d in journal.decisions(SPEC.name)]
    assert actions.count("retune") == 1 and actions.count("keep") >= 5, "every decision is journaled"


def test_the_first_decision_waits_out_the_startup_grace(tmp_path: Path, book: ModelBook) -> None:
    loop, _, clock, _, recorder, _ = make_loop(tmp_path, book, interval_ms=3_000)
    run_for(loop, clock, 60)
    assert recorder.decisions and all(d.action == "keep" and "startup grace" in d.reason for d in recorder.decisions)
    run_for(loop, clock, 60)
    assert [r.outcome for r in recorder.retunes] == ["verified"], "latency binds at 3 s: it lengthens"


def test_a_dry_run_recommends_and_realizes_nothing(tmp_path: Path, book: ModelBook) -> None:
    loop, cluster, clock, scripted, recorder, journal = make_loop(tmp_path, book, dry_run=True)
    scripted.rate = 6000
    run_for(loop, clock, 400)
    assert not recorder.retunes and cluster.submissions == 0 and len(cluster.live()) == 1
    assert cluster.jobs[cluster.live()[0]].state == "RUNNING"
    advised = [d for d in recorder.decisions if "dry run: would retune" in d.reason]
    assert advised and all(d.action == "keep" and d.interval_s == 30 for d in advised)
    assert journal.retunes() == []


def test_a_live_failure_becomes_a_recovery_point_and_the_model_is_refitted(tmp_path: Path) -> None:
    book = ModelBook(profile(), fitter=in_process)
    loop, _, clock, scripted, recorder, journal = make_loop(tmp_path, book)
    scripted.down_between = (100, 125)
    run_for(loop, clock, 200)
    assert len(recorder.failures) == 1
    failure = recorder.failures[0]
    assert failure.recovery_s is not None and 25 <= failure.recovery_s <= 45
    assert failure.interval_ms == 30_000 and failure.rate == 2000
    assert book.live_recoveries == 1
    assert [r.recovery_s for r in journal.recoveries(SPEC.name)] == [failure.recovery_s]
    assert loop.state.failures_at_s == [100]
    assert loop.qos.recovery_s == 0, "recovered within the 60 s target"


def test_a_half_done_retune_is_finished_before_anything_else(tmp_path: Path, book: ModelBook) -> None:
    loop, cluster, _, _, _, journal = make_loop(tmp_path, book)
    old = loop.state.job
    savepoint = cluster.stop_with_savepoint(old.job_id)
    entry = journal.open_retune(SPEC.name, old.job_id, 30_000, 10_000, cluster.tick(), "")
    journal.advance(entry.retune_id, "savepoint", cluster.tick(), savepoint=savepoint)
    outcome = loop.finish_pending()
    assert outcome is not None and outcome.outcome == "verified"
    assert cluster.live() == [loop.state.job.job_id] and loop.state.job.settings.interval_ms == 10_000
    assert cluster.jobs[loop.state.job.job_id].restored_from == savepoint
    assert loop.finish_pending() is None
