"""Putting cluster-level recovery settings in force on a running cluster: stop every job with a savepoint, restart
the cluster, resubmit every job, on a fake cluster that forgets its jobs when restarted (a session cluster without
HA) and can die anywhere. The same path on the real stack: tests/integration/test_recovery_settings.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.errors import FlinkRequestFailed
from chronos.model import TERMINAL_STATES, CheckpointSettings, ClusterShape, JobSpec, ReconfigurePlan
from chronos.stack.cluster_restart import PlanFile
from chronos.tune.cluster_reconfigure import ClusterReconfigurer
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob
from tests.support.fake_cluster import Crash, FakeCluster

FAST = ClusterShape((("heartbeat.interval", "1000 ms"), ("heartbeat.timeout", "5000 ms")), spare_taskmanagers=1)
SPECS = (JobSpec("vehicle-stats", "/jobs/a.py"), JobSpec("speeding-zones", "/jobs/b.sql"))


class RestartableCluster(FakeCluster):
    def __init__(self) -> None:
        super().__init__()
        self.shape = ClusterShape()
        self.restarts: list[ClusterShape] = []
        self.crash_on_restart = False
        self.unstoppable: set[str] = set()
        self.crash_after_stops: int | None = None
        self.stops = 0

    def stop_with_savepoint(self, job_id: str) -> str:
        if job_id in self.unstoppable:
            raise FlinkRequestFailed("savepoint timed out")
        if self.crash_after_stops is not None and self.stops == self.crash_after_stops:
            raise Crash
        self.stops += 1
        return super().stop_with_savepoint(job_id)

    # -- ClusterRestarter --
    def in_force(self) -> ClusterShape:
        return self.shape

    def restart(self, shape: ClusterShape) -> None:
        unsaved = [jid for jid, job in self.jobs.items() if job.state not in TERMINAL_STATES]
        assert not unsaved, f"restarted with jobs running: {unsaved} would be lost"
        self.restarts.append(shape)
        self.shape = shape
        if self.crash_on_restart:
            raise Crash


class MemoryPlans:
    def __init__(self) -> None:
        self.plan: ReconfigurePlan | None = None

    def load(self) -> ReconfigurePlan | None:
        return self.plan

    def save(self, plan: ReconfigurePlan) -> None:
        self.plan = plan

    def clear(self) -> None:
        self.plan = None


World = tuple[RestartableCluster, TuneJournal, MemoryPlans, list[TunedJob]]


@pytest.fixture
def world(tmp_path: Path) -> World:
    cluster = RestartableCluster()
    jobs = [TunedJob(cluster.start(spec.name, ms), spec, CheckpointSettings(ms))
            for spec, ms in zip(SPECS, (5_000, 30_000), strict=True)]
    return cluster, TuneJournal(tmp_path / "chronos.db"), MemoryPlans(), jobs


def reconfigurer(world: World) -> ClusterReconfigurer:
    cluster, journal, plans, jobs = world
    by_id = {job.job_id: job for job in jobs}
    retuner = Retuner(cluster, journal, wall_ms=cluster.tick, sleep=lambda s: None, settle_timeout_s=0)  # type: ignore[arg-type]
    return ClusterReconfigurer(retuner, journal, cluster, plans, by_id.get)


def assert_each_job_runs_once_from_its_own_savepoint(cluster: RestartableCluster, jobs: list[TunedJob]) -> None:
    live = cluster.live()
    assert len(live) == len(jobs)
    for job in jobs:
        new = [jid for jid in live if cluster.jobs[jid].name == job.spec.name]
        assert len(new) == 1, f"{job.spec.name} runs {len(new)} times"
        assert cluster.jobs[new[0]].restored_from == cluster.jobs[job.job_id].savepoints[-1]
        assert cluster.jobs[new[0]].interval_ms == job.settings.interval_ms, "its own interval kept"


def test_every_job_is_stopped_with_a_savepoint_the_cluster_restarted_once_and_every_job_resubmitted(world: World) -> None:
    cluster, journal, plans, jobs = world
    outcome = reconfigurer(world).reconfigure(FAST, jobs)
    assert cluster.restarts == [FAST] and outcome.restarted
    assert [o.outcome for o in outcome.jobs] == ["verified", "verified"]
    assert_each_job_runs_once_from_its_own_savepoint(cluster, jobs)
    assert plans.plan is None and all(journal.unfinished(spec.name) is None for spec in SPECS)


def test_a_job_that_cannot_be_stopped_calls_it_off_and_every_job_runs_on_the_unchanged_cluster(world: World) -> None:
    cluster, _, plans, jobs = world
    cluster.unstoppable = {jobs[1].job_id}
    with pytest.raises(FlinkRequestFailed, match=r"could not stop speeding-zones.*cluster is unchanged"):
        reconfigurer(world).reconfigure(FAST, jobs)
    assert cluster.restarts == [] and plans.plan is None
    assert cluster.jobs[jobs[1].job_id].state == "RUNNING", "the one that could not stop runs on"
    resubmitted = [jid for jid in cluster.live() if jid != jobs[1].job_id]
    assert [cluster.jobs[jid].restored_from for jid in resubmitted] == cluster.jobs[jobs[0].job_id].savepoints[-1:]


@pytest.mark.parametrize("dies", ["after the first stop", "during the restart"])
def test_an_interrupted_reconfiguration_is_finished_by_resume_and_never_restarts_with_a_job_unsaved(
    world: World, dies: str
) -> None:
    cluster, _, plans, jobs = world
    if dies == "after the first stop":
        cluster.crash_after_stops = 1
    else:
        cluster.crash_on_restart = True
    with pytest.raises(Crash):
        reconfigurer(world).reconfigure(FAST, jobs)
    assert plans.plan == ReconfigurePlan(FAST, tuple(job.job_id for job in jobs)), "the plan was written ahead"
    with pytest.raises(FlinkRequestFailed, match="interrupted reconfiguration"):
        reconfigurer(world).reconfigure(ClusterShape(), jobs)
    cluster.crash_after_stops, cluster.crash_on_restart = None, False
    outcome = reconfigurer(world).resume()
    assert outcome is not None and cluster.shape == FAST
    assert len(cluster.restarts) == 1, "restarted once in all"
    assert_each_job_runs_once_from_its_own_savepoint(cluster, jobs)
    assert plans.plan is None and reconfigurer(world).resume() is None


def test_the_plan_file_round_trips_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    plans = PlanFile(tmp_path)
    assert plans.load() is None
    plan = ReconfigurePlan(FAST, ("a1", "b2"))
    plans.save(plan)
    assert plans.load() == plan
    plans.clear()
    assert plans.load() is None
    (tmp_path / "reconfigure.json").write_text("{}")
    with pytest.raises(Exception, match="not a reconfiguration plan"):
        plans.load()
