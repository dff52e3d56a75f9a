"""The one port that changes a running job: a restart realization restarts for every change and carries the proposed
job-level settings with it; a paced one paces a cadence change with no restart, restarts only for a fallback change
and paces the new job at once; the same paced realization over a FlinkDeployment's realizer; adoption takes a
predecessor's journaled cadence over only when asked. On fakes of our own wrappers (the cluster, the pacer, the
operator)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from chronos.k8s.flink_deployment import INTERVAL_KEY, DeploymentRealizer
from chronos.model import CheckpointSettings, JobSpec
from chronos.optimizer.decide import Decision
from chronos.optimizer.evaluate import Assessment
from chronos.tune.journal import TuneJournal
from chronos.tune.realization import Paced, Restarting
from chronos.tune.retune import Retuner, TunedJob
from tests.support.clocks import Clock
from tests.support.fake_cluster import FakeCluster
from tests.support.fake_operator import FakeOperator, job_id
from tests.support.fake_pacing import FakePacing

SPEC = JobSpec("vehicle-stats", "/jobs/vehicle_stats_job.py")


def decision(action: Literal["retune", "pace", "keep"], interval_s: float, fallback_s: float | None = None) -> Decision:
    here = Assessment(interval_s, None, None, None, None, None)
    return Decision(action, interval_s, interval_s, "test", True, "recovery", here, here, 1000.0, "last", 0.0,
                    "chronos", fallback_s=fallback_s)


@pytest.fixture
def journal(tmp_path: Path) -> TuneJournal:
    return TuneJournal(tmp_path / "chronos.db")


def on_cluster(journal: TuneJournal, interval_ms: int = 30_000) -> tuple[FakeCluster, Retuner, TunedJob]:
    cluster = FakeCluster()
    job = TunedJob(cluster.start(SPEC.name, interval_ms), SPEC, CheckpointSettings(interval_ms))
    return cluster, Retuner(cluster, journal, wall_ms=cluster.tick, clock=Clock(), sleep=lambda s: None,
                            settle_timeout_s=0), job


def test_restarting_restarts_with_the_proposed_job_settings_and_tells_the_watch_the_new_job(journal: TuneJournal) -> None:
    cluster, retuner, job = on_cluster(journal)
    followed: list[str] = []
    restarting = Restarting(retuner, (("restart-strategy.fixed-delay.delay", "1 s"),), follow=followed.append)
    assert not restarting.paces
    assert restarting.realize(job, decision("keep", 30)).job == job, "a keep changes nothing"
    realized = restarting.realize(job, decision("retune", 10))
    assert realized.retune is not None and realized.retune.outcome == "verified" and realized.cadence is None
    assert realized.job.settings.interval_ms == 10_000 and cluster.jobs[realized.job.job_id].interval_ms == 10_000
    assert ("restart-strategy.fixed-delay.delay", "1 s") in realized.job.spec.extra_config
    assert "with the proposed recovery settings" in realized.retune.entry.explanation
    assert followed == [realized.job.job_id]


def test_paced_changes_the_cadence_with_no_restart(journal: TuneJournal) -> None:
    cluster, retuner, job = on_cluster(journal)
    pacing = FakePacing(journal, SPEC.name)
    realized = Paced(pacing, Restarting(retuner, follow=pacing.follow)).realize(job, decision("pace", 5))
    assert realized.retune is None and realized.job.job_id == job.job_id and realized.job.paced_ms == 5000
    assert pacing.paced == [(job.job_id, 5000, 30_000)], "the job's own interval is the fallback"
    assert cluster.live() == [job.job_id]


def test_paced_restarts_for_a_fallback_change_and_paces_the_new_job_at_once(journal: TuneJournal) -> None:
    _cluster, retuner, job = on_cluster(journal, interval_ms=120_000)
    pacing = FakePacing(journal, SPEC.name)
    realized = Paced(pacing, Restarting(retuner, follow=pacing.follow)).realize(job, decision("retune", 5, 20))
    assert realized.retune is not None and realized.retune.outcome == "verified"
    new = realized.job
    assert new.job_id != job.job_id and new.settings.interval_ms == 20_000 and new.paced_ms == 5000
    assert pacing.followed == [new.job_id] and pacing.paced == [(new.job_id, 5000, 20_000)]
    assert realized.cadence is not None and realized.cadence.to_ms == 5000


def test_a_restart_that_raises_paces_nothing(journal: TuneJournal) -> None:
    cluster, retuner, job = on_cluster(journal, interval_ms=120_000)
    cluster.failing_submissions = 99
    pacing = FakePacing(journal, SPEC.name)
    with pytest.raises(Exception):  # noqa: B017 - whatever the realizer raised: the loop finishes it from the journal
        Paced(pacing, Restarting(retuner, follow=pacing.follow)).realize(job, decision("retune", 5, 20))
    assert pacing.paced == []


def test_paced_over_a_flink_deployment_patches_the_fallback_and_paces_the_upgraded_job(journal: TuneJournal) -> None:
    ticks, operator = iter(range(10**6)), FakeOperator(interval="120s")
    deployment = DeploymentRealizer(operator, "streaming", "fleet", journal, wall_ms=lambda: next(ticks),
                                    clock=lambda: 0.0, sleep=lambda s: None, interval_in_force=lambda job_id: 20_000)
    pacing = FakePacing(journal, SPEC.name)
    job = TunedJob(job_id(0), JobSpec("fleet-stats", ""), CheckpointSettings(120_000))
    realized = Paced(pacing, Restarting(deployment, follow=pacing.follow)).realize(job, decision("retune", 5, 20))
    assert realized.retune is not None and realized.retune.outcome == "verified"
    assert realized.job.job_id == job_id(1) and pacing.paced == [(job_id(1), 5000, 20_000)]
    assert operator.patches == [{INTERVAL_KEY: "20s"}], "the fallback patched, the cadence not: it needs no upgrade"


def test_adoption_takes_a_journaled_cadence_over_only_when_asked(journal: TuneJournal) -> None:
    _cluster, retuner, job = on_cluster(journal)
    pacing = FakePacing(journal, SPEC.name)
    paced = Paced(pacing, Restarting(retuner, follow=pacing.follow))
    assert paced.adopt(job, take_over=True).job.paced_ms is None, "nothing journaled: not paced yet"
    journal.open_cadence(SPEC.name, job.job_id, None, 4000, 30_000, 0, "a predecessor's")
    assert paced.adopt(job, take_over=False).job.paced_ms is None, "a dry run paces nothing"
    adopted = paced.adopt(job, take_over=True)
    assert adopted.job.paced_ms == 4000 and adopted.cadence is not None
    assert pacing.followed == [job.job_id] * 3
    assert Restarting(retuner).adopt(job, take_over=True).job.paced_ms is None, "a restart realization never paces"
