"""`chronos tune --allow-fault`: with no models, the tuner injects one fault into the live job after the startup
grace (once a checkpoint has been measured) and measures the recovery like any live failure's, so the cold
start works from a measured recovery instead of its default. With models it never injects one."""

from __future__ import annotations

from pathlib import Path

from chronos.model import CheckpointSettings
from chronos.optimizer.model_values import ProfileObservations
from chronos.tune.fitting import ModelBook
from chronos.tune.journal import TuneJournal
from chronos.tune.loop import LoopSettings, TuneLoop
from chronos.tune.realization import Restarting
from chronos.tune.retune import Retuner, TunedJob
from tests.support.clocks import Clock
from tests.support.fake_cluster import FakeCluster
from tests.unit.test_tune_loop import POLICY, SPEC, Recorder, ScriptedJob, in_process, profile, run_for


def probed_loop(tmp_path: Path, book: ModelBook) -> tuple[TuneLoop, Clock, Recorder, list[float]]:
    cluster, clock = FakeCluster(), Clock()
    job = TunedJob(cluster.start(SPEC.name, 30_000), SPEC, CheckpointSettings(30_000))
    journal = TuneJournal(tmp_path / "chronos.db")
    scripted, recorder = ScriptedJob(cluster, clock), Recorder()
    probes: list[float] = []

    def probe() -> str:
        probes.append(clock.now)
        scripted.down_between = (clock.now, clock.now + 20)  # the killed TaskManager: 20 s down, then back
        return "killed pid 42"

    retuner = Retuner(cluster, journal, wall_ms=cluster.tick, clock=clock, sleep=lambda s: None, settle_timeout_s=0)
    loop = TuneLoop(job, POLICY, scripted, Restarting(retuner), journal, book, recorder,
                    LoopSettings(collect_every_s=5, decide_every_s=30, dry_run=True), clock=clock, probe=probe)
    return loop, clock, recorder, probes


def test_without_models_one_fault_is_injected_after_the_grace_and_its_recovery_feeds_the_cold_start(
        tmp_path: Path) -> None:
    loop, clock, recorder, probes = probed_loop(tmp_path, ModelBook(ProfileObservations((), ()), fitter=in_process))
    run_for(loop, clock, 400)
    assert len(probes) == 1 and probes[0] >= POLICY.startup_grace_s, "once, after the startup grace"
    assert any("recovery probe (--allow-fault): killed pid 42" in m for m in recorder.messages)
    assert len(recorder.failures) == 1 and recorder.failures[0].recovery_s is not None
    assert list(loop.state.recoveries_s) == [recorder.failures[0].recovery_s]
    later = [d for d in recorder.decisions if d.mode == "cold-start" and "recoveries seen" in d.reason]
    assert later and "median of 1 recoveries seen" in later[-1].reason, [d.reason for d in recorder.decisions]


def test_with_models_no_fault_is_ever_injected(tmp_path: Path) -> None:
    loop, clock, recorder, probes = probed_loop(tmp_path, ModelBook(profile(), fitter=in_process))
    run_for(loop, clock, 400)
    assert probes == [] and not recorder.failures
