"""The control loop on a fake cluster and a scripted job: when it retunes, when it only advises, how a
live failure becomes a model point, and that a journaled half-retune is finished before anything else.
The real-stack version of each is in tests/integration/test_tune.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chronos.model import CheckpointSettings, JobSpec, SourceFailure
from chronos.optimizer.decide import Decision
from chronos.optimizer.evaluate import JobModels
from chronos.optimizer.model_values import Observation, ProfileObservations
from chronos.optimizer.models import fit_best
from chronos.optimizer.policy import TunePolicy
from chronos.tune.decided import Decided
from chronos.tune.failures import ObservedFailure
from chronos.tune.fitting import ModelBook
from chronos.tune.journal import TuneJournal
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.outages import OutageEvent
from chronos.tune.readings import LiveReading
from chronos.tune.realization import Restarting
from chronos.tune.retune import RetuneOutcome, Retuner, TunedJob
from tests.support.clocks import Clock
from tests.support.fake_cluster import FakeCluster
from tests.support.truths import latency_truth, recovery_truth

SPEC = JobSpec("vehicle-stats", "/jobs/vehicle_stats_job.py")
POLICY = TunePolicy(latency_p99_ms=1500, recovery_s=60, startup_grace_s=60, cooldown_s=300)


@dataclass
class ScriptedJob:
    """Readings of whatever job the fake cluster runs: rate from the script, latency from the truth."""

    cluster: FakeCluster
    clock: Clock
    rate: float = 2000.0
    down_between: tuple[float, float] | None = None  # clock seconds the job is failing
    out: dict[str, tuple[float, float]] = field(default_factory=dict)  # source -> clock seconds it is unreadable
    raise_between: tuple[float, float] | None = None  # clock seconds the collector itself raises

    def _out(self, source: str) -> bool:
        window = self.out.get(source)
        return window is not None and window[0] <= self.clock.now < window[1]

    def collect(self, job_id: str) -> LiveReading:
        if self.raise_between and self.raise_between[0] <= self.clock.now < self.raise_between[1]:
            raise ConnectionResetError("Connection reset by peer")
        interval_ms = self.cluster.jobs[job_id].interval_ms
        at_ms = int(self.clock.now * 1000) + 1_000_000
        down = self.down_between is not None and self.down_between[0] <= self.clock.now < self.down_between[1]
        p99 = latency_truth(interval_ms / 1000, self.rate)
        failures = tuple(SourceFailure(source, "unreachable") for source in self.out if self._out(source))
        rest_out, kafka_out = self._out("flink-rest"), self._out("kafka")
        running = not down and not rest_out  # REST down reads as not running, as the real collector says
        return LiveReading(at_ms, running, None if rest_out else interval_ms, None if kafka_out else self.rate,
                           None if down else self.rate, 50.0, p99, None if down else p99, (0.5,), None,
                           failures=failures)


@dataclass
class Recorder:
    decisions: list[Decision] = field(default_factory=list)
    retunes: list[RetuneOutcome] = field(default_factory=list)
    failures: list[ObservedFailure] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    outages: list[OutageEvent] = field(default_factory=list)
    fit_failures: list[str] = field(default_factory=list)
    steps: int = 0

    def reading(self, *args: object) -> None:
        return None

    def decision(self, job: TunedJob, decided: Decided) -> None:
        self.decisions.append(decided.decision)

    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None:
        self.retunes.append(outcome)

    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None:
        self.failures.append(failure)

    def message(self, text: str) -> None:
        self.messages.append(text)

    def outage(self, job: TunedJob, event: OutageEvent) -> None:
        self.outages.append(event)

    def fit_failed(self, job: TunedJob, error: str) -> None:
        self.fit_failures.append(error)

    def stepped(self, wall_ms: int) -> None:
        self.steps += 1


def profile() -> ProfileObservations:
    grid = [(i, r) for i in (1, 2, 3, 5, 8, 12, 20, 30, 45, 60, 90, 120) for r in (1000, 2500, 5000, 8000)]
    return ProfileObservations(tuple(Observation(i, r, recovery_truth(i, r)) for i, r in grid),
                               tuple(Observation(i, r, latency_truth(i, r)) for i, r in grid))


def in_process(observations, seed, capacity=None, rising=False):  # type: ignore[no-untyped-def]
    return fit_best(observations, seed=seed)


@pytest.fixture(scope="module")
def book() -> ModelBook:
    return ModelBook(profile(), fitter=in_process)


def make_loop(tmp_path: Path, book: ModelBook, *, dry_run: bool = False, interval_ms: int = 30_000,  # type: ignore[no-untyped-def]
              recovery_settings: tuple[tuple[str, str], ...] = (), job_settings: tuple[tuple[str, str], ...] = ()):
    cluster, clock = FakeCluster(), Clock()
    job = TunedJob(cluster.start(SPEC.name, interval_ms), SPEC, CheckpointSettings(interval_ms))
    journal = TuneJournal(tmp_path / "chronos.db")
    scripted, recorder = ScriptedJob(cluster, clock), Recorder()
    retuner = Retuner(cluster, journal, wall_ms=cluster.tick, clock=clock, sleep=lambda s: None, settle_timeout_s=0)
    loop = TuneLoop(job, POLICY, scripted, Restarting(retuner, job_settings), journal, book, recorder,
                    LoopSettings(collect_every_s=5, decide_every_s=30, dry_run=dry_run), clock=clock,
                    recovery_settings=recovery_settings)
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
    settings = (("heartbeat.timeout", "10s"), ("chronos.spare-taskmanagers", "1"))
    loop, _, clock, scripted, recorder, journal = make_loop(tmp_path, book, recovery_settings=settings)
    scripted.down_between = (100, 125)
    run_for(loop, clock, 200)
    assert len(recorder.failures) == 1
    failure = recorder.failures[0]
    assert failure.recovery_s is not None and 25 <= failure.recovery_s <= 45
    assert failure.interval_ms == 30_000 and failure.rate == 2000
    assert book.live_recoveries == 1
    (stored,) = journal.recoveries(SPEC.name)
    assert stored.recovery_s == failure.recovery_s
    assert stored.running_ms == stored.failed_ms + 25_000, "Flink saw it at 100 s; every task ran again at 125 s"
    assert stored.capacity == 2000 and stored.settings_in_force == settings, "its catch-up's terms, the settings"
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



# -- a tuner that runs for weeks: nothing outside the loop ends it ----------------------------------------
def test_a_collector_that_raises_is_an_outage_said_once_each_way_and_the_loop_goes_on(tmp_path: Path,
                                                                                    book: ModelBook) -> None:
    loop, _, clock, scripted, recorder, _ = make_loop(tmp_path, book)
    scripted.raise_between = (100, 200)
    run_for(loop, clock, 300)
    assert [(e.source, e.kind) for e in recorder.outages] == [("collector", "began"), ("collector", "ended")]
    assert "ConnectionResetError" in recorder.outages[0].error and recorder.outages[1].duration_s == 100
    assert not recorder.failures, "a reading of nothing is not a job failure"
    assert not [d for d in recorder.decisions if 100 <= d.at_s < 200], "no decision on a reading of nothing"
    assert [d for d in recorder.decisions if d.at_s >= 200], "deciding again once it is back"


def test_decisions_are_held_while_the_input_rate_is_unreadable(tmp_path: Path, book: ModelBook) -> None:
    loop, _, clock, scripted, recorder, _ = make_loop(tmp_path, book)
    run_for(loop, clock, 100)
    scripted.out["kafka"] = (100, 400)
    scripted.rate = 6000  # a step the tuner cannot see while Kafka is out
    run_for(loop, clock, 300)
    assert not recorder.retunes and not [d for d in recorder.decisions if 100 <= d.at_s < 400]
    assert [(e.source, e.kind) for e in recorder.outages] == [("kafka", "began")]
    run_for(loop, clock, 200)
    assert [(e.source, e.kind) for e in recorder.outages][-1] == ("kafka", "ended")
    assert len(recorder.retunes) == 1, "once the rate is readable again, the step is acted on"


def test_a_rest_outage_is_never_taken_for_a_job_failure(tmp_path: Path, book: ModelBook) -> None:
    loop, _, clock, scripted, recorder, _ = make_loop(tmp_path, book)
    scripted.out["flink-rest"] = (100, 160)
    run_for(loop, clock, 300)
    assert not recorder.failures and loop.state.failures_at_s == [] and loop.qos.recovery_s == 0
    assert [(e.source, e.kind) for e in recorder.outages] == [("flink-rest", "began"), ("flink-rest", "ended")]


def test_a_retune_that_fails_is_finished_from_the_journal_later_with_nothing_decided_meanwhile(
        tmp_path: Path, book: ModelBook) -> None:
    loop, cluster, clock, scripted, recorder, journal = make_loop(tmp_path, book)
    run_for(loop, clock, 100)
    cluster.failing_submissions = 1000  # Flink refuses every submission: the job is left stopped
    scripted.rate = 6000
    decided_before = len(recorder.decisions)
    run_for(loop, clock, 900)
    retries = [m for m in recorder.messages if "retune failed" in m and "will be finished in" in m]
    delays = [float(m.split("will be finished in ")[1].split(" s")[0]) for m in retries]
    assert len(retries) >= 3 and delays == sorted(delays), "tried again, less and less often"
    stopped = journal.retunes()[-1]
    assert stopped.step == "rolling-back" and stopped.savepoint, "stopped, its savepoint journaled, on its way back"
    assert [d.action for d in recorder.decisions[decided_before:]].count("retune") == 1, "no other decision meanwhile"
    cluster.failing_submissions = 0
    run_for(loop, clock, 1300)
    assert journal.retune(stopped.retune_id).step == "rolled-back", "back at the interval that ran before, from its savepoint"
    assert journal.retunes()[-1].finished
    assert cluster.live() == [loop.state.job.job_id]
    assert not recorder.failures, "the stopped job awaiting its resubmission is not a failure"


class StopAfter(threading.Event):
    """A stop signal that arrives after `steps` waits between steps."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.left = steps

    def wait(self, timeout: float | None = None) -> bool:
        self.left -= 1
        if self.left <= 0:
            self.set()
        return self.is_set()


def test_every_completed_step_is_a_heartbeat(tmp_path: Path, book: ModelBook) -> None:
    loop, _, _, _, recorder, _ = make_loop(tmp_path, book)
    loop.run(StopAfter(3))
    assert recorder.steps == 3


def test_the_proposed_job_level_recovery_settings_go_with_a_restart_retune_and_never_cause_one(
        tmp_path: Path, book: ModelBook) -> None:
    delay = (("restart-strategy.type", "fixed-delay"), ("restart-strategy.fixed-delay.delay", "500 ms"))
    loop, cluster, clock, scripted, recorder, journal = make_loop(tmp_path, book, job_settings=delay)
    run_for(loop, clock, 200)
    assert not recorder.retunes and cluster.submissions == 0, "no retune of their own"
    scripted.rate = 6000
    run_for(loop, clock, 200)
    (retune,) = recorder.retunes
    assert set(delay) <= set(retune.job.spec.extra_config), "resubmitted with them"
    assert "with the proposed recovery settings restart-strategy.type=fixed-delay" in journal.retunes()[0].explanation


def test_steady_running_at_one_interval_becomes_a_point_of_the_latency_model(tmp_path: Path) -> None:
    book = ModelBook(profile(), fitter=in_process)
    loop, _, clock, _, recorder, journal = make_loop(tmp_path, book)
    run_for(loop, clock, 700)
    assert book.live_latencies == 1
    [said] = [m for m in recorder.messages if m.startswith("live p99 at 30 s")]
    assert "latency model refitted (1 live windows" in said
    [kept] = journal.latencies(SPEC.name)
    assert (kept.interval_ms, kept.rate, kept.p99_ms) == (30_000, 2000.0, latency_truth(30, 2000))
    again = ModelBook(profile(), fitter=in_process, live_latencies=[Observation(30, 2000, kept.p99_ms)])
    assert again.live_latencies == 1, "the next tuner starts from the journaled windows"
