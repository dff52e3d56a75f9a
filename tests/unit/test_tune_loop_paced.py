"""The control loop with pacing, on the fake cluster and a fake of our own Pacing: a cadence change goes to the
pacing (no restart, no cooldown), a restart of the fallback goes through the Retuner and hands the new job to the
pacing at the cadence decided, a journaled cadence is taken over at start, and a dry run paces nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.model import CheckpointSettings
from chronos.optimizer.policy import TunePolicy
from chronos.tune.fitting import ModelBook
from chronos.tune.journal import TuneJournal
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.realization import Paced, Restarting
from chronos.tune.retune import Retuner, TunedJob
from tests.support.clocks import Clock
from tests.support.fake_cluster import FakeCluster
from tests.support.fake_pacing import FakePacing
from tests.unit.test_tune_loop import SPEC, Recorder, ScriptedJob, in_process, profile, run_for

POLICY = TunePolicy(latency_p99_ms=1500, recovery_s=60, startup_grace_s=60, cooldown_s=300)


@pytest.fixture(scope="module")
def book() -> ModelBook:
    return ModelBook(profile(), fitter=in_process)


def paced_loop(tmp_path: Path, book: ModelBook, *, interval_ms: int, dry_run: bool = False):  # type: ignore[no-untyped-def]
    cluster, clock = FakeCluster(), Clock()
    job = TunedJob(cluster.start(SPEC.name, interval_ms), SPEC, CheckpointSettings(interval_ms))
    journal = TuneJournal(tmp_path / "chronos.db")
    scripted, recorder = ScriptedJob(cluster, clock), Recorder()
    retuner = Retuner(cluster, journal, wall_ms=cluster.tick, clock=clock, sleep=lambda s: None, settle_timeout_s=0)
    pacing = FakePacing(journal, SPEC.name)
    realization = Paced(pacing, Restarting(retuner, follow=pacing.follow))
    loop = TuneLoop(job, POLICY, scripted, realization, journal, book, recorder,
                    LoopSettings(collect_every_s=5, decide_every_s=30, dry_run=dry_run), clock=clock)
    return loop, cluster, clock, scripted, recorder, pacing


def test_load_steps_change_the_cadence_with_no_restart_and_no_cooldown(tmp_path: Path, book: ModelBook) -> None:
    loop, _cluster, clock, scripted, recorder, pacing = paced_loop(tmp_path, book, interval_ms=30_000)
    run_for(loop, clock, 100)
    assert pacing.paced == [] and recorder.retunes == [], "30 s meets both targets at 2,000 ev/s"
    scripted.rate = 6000
    run_for(loop, clock, 40)
    # 30 s would miss recovery at 6,000 ev/s without chronos: one restart sets the fallback, paced at once
    assert len(recorder.retunes) == 1, [d.explain() for d in recorder.decisions]
    job_id, first = loop.state.job.job_id, pacing.paced[-1][1]
    scripted.rate = 8000
    run_for(loop, clock, 60)
    assert pacing.paced[-1][1] < first, "within the restart's cooldown, the cadence follows the load"
    assert pacing.paced[-1][0] == job_id and loop.state.job.job_id == job_id
    assert len(recorder.retunes) == 1 and len(loop.state.retunes_at_s) == 1, "a cadence change is no retune"
    assert loop.state.job.paced_ms == pacing.paced[-1][1]


def test_a_fallback_that_would_miss_recovery_is_restarted_and_the_new_job_paced(tmp_path: Path, book: ModelBook) -> None:
    loop, _cluster, clock, scripted, recorder, pacing = paced_loop(tmp_path, book, interval_ms=120_000)
    old = loop.state.job.job_id
    scripted.rate = 6000
    run_for(loop, clock, 100)
    assert len(recorder.retunes) == 1 and recorder.retunes[0].outcome == "verified"
    new = loop.state.job
    assert new.job_id != old and new.settings.interval_ms < 120_000
    assert pacing.followed == [new.job_id] and pacing.paced[-1][0] == new.job_id
    assert new.paced_ms == pacing.paced[-1][1] and pacing.paced[-1][2] == new.settings.interval_ms


def test_a_journaled_cadence_is_taken_over_at_start_with_no_decision(tmp_path: Path, book: ModelBook) -> None:
    loop, _cluster, _clock, _scripted, recorder, pacing = paced_loop(tmp_path, book, interval_ms=120_000)
    pacing.journal.open_cadence(SPEC.name, loop.state.job.job_id, None, 4000, 120_000, 0, "a previous tuner's")
    loop.start()
    assert loop.state.job.paced_ms == 4000 and recorder.decisions == []
    assert any("pacing" in m and "at 4 s" in m for m in recorder.messages)


def test_a_dry_run_paces_nothing(tmp_path: Path, book: ModelBook) -> None:
    loop, _cluster, clock, scripted, recorder, pacing = paced_loop(tmp_path, book, interval_ms=30_000, dry_run=True)
    run_for(loop, clock, 100)
    scripted.rate = 6000
    run_for(loop, clock, 120)
    assert pacing.paced == [] and all(d.action == "keep" for d in recorder.decisions)
    assert any("dry run: would" in d.reason for d in recorder.decisions)
