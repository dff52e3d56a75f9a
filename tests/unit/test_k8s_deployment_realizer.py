"""Retuning an operator-managed job: the FlinkDeployment's flinkConfiguration is patched, the operator
upgrades it from a savepoint, chronos verifies; a stateless deployment is refused; a dead tuner's
retune is finished or abandoned by the next one. Against a fake of our own two-method wrapper (no
Kubernetes cluster is reachable here), which mimics what the operator does with a spec change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronos.errors import InvalidInput
from chronos.k8s.flink_deployment import INTERVAL_KEY, DeploymentFailed, DeploymentRealizer, DeploymentStatus
from chronos.model import CheckpointSettings, JobSpec
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import TunedJob
from tests.support.fake_operator import FakeOperator, job_id

SPEC = JobSpec("fleet-stats", "")


def realizer(operator: FakeOperator, journal: TuneJournal, **kwargs: Any) -> DeploymentRealizer:
    ticks = iter(range(10**6))
    return DeploymentRealizer(operator, "streaming", "fleet", journal, wall_ms=lambda: next(ticks),
                              clock=lambda: 0.0, sleep=lambda s: None, **kwargs)


@pytest.fixture
def journal(tmp_path: Path) -> TuneJournal:
    return TuneJournal(tmp_path / "chronos.db")


JOB = TunedJob(job_id(0), SPEC, CheckpointSettings(30_000))


def test_a_retune_patches_the_interval_and_waits_for_the_operators_upgrade(journal: TuneJournal) -> None:
    operator = FakeOperator()
    in_force: list[str] = []
    outcome = realizer(operator, journal, interval_in_force=lambda job_id: in_force.append(job_id) or 10_000) \
        .retune(JOB, 10_000, "recovery binds")
    assert operator.patches == [{INTERVAL_KEY: "10s"}], "only the interval key is merged into the spec"
    assert outcome.outcome == "verified" and outcome.job.job_id == job_id(1)
    assert outcome.job.settings.interval_ms == 10_000
    assert in_force == [job_id(1)], "verified on the new job through Flink REST"
    entry = journal.retunes()[-1]
    assert (entry.step, entry.new_job_id, entry.to_interval_ms) == ("verified", job_id(1), 10_000)
    assert "the operator upgrades it (upgradeMode savepoint)" in entry.note


def test_a_stateless_deployment_is_refused_before_anything_is_journaled_or_patched(journal: TuneJournal) -> None:
    operator = FakeOperator(upgrade_mode="stateless")
    with pytest.raises(InvalidInput, match="upgradeMode 'stateless'"):
        realizer(operator, journal).retune(JOB, 10_000, "")
    assert operator.patches == [] and journal.retunes() == []


def test_an_upgrade_the_operator_cannot_run_is_patched_back(journal: TuneJournal) -> None:
    operator = FakeOperator()
    operator.fails = True
    outcome = realizer(operator, journal).retune(JOB, 10_000, "")
    assert outcome.outcome == "rolled-back" and outcome.job == JOB
    assert operator.patches == [{INTERVAL_KEY: "10s"}, {INTERVAL_KEY: "30s"}]
    assert "restore failed" in journal.retunes()[-1].note


def test_a_wrong_interval_in_force_is_an_error_not_a_success(journal: TuneJournal) -> None:
    with pytest.raises(DeploymentFailed, match="runs with interval 30s"):
        realizer(FakeOperator(), journal, interval_in_force=lambda job_id: 30_000).retune(JOB, 10_000, "")


def test_an_upgrade_that_never_settles_times_out_with_the_state_it_was_in(journal: TuneJournal) -> None:
    operator = FakeOperator(upgrade_polls=10**6)
    clock = iter(float(i) for i in range(10**6))
    stuck = DeploymentRealizer(operator, "streaming", "fleet", journal, clock=lambda: next(clock),
                               sleep=lambda s: None, upgrade_timeout_s=5)
    with pytest.raises(DeploymentFailed, match="lifecycle UPGRADING"):
        stuck.retune(JOB, 10_000, "")
    assert journal.retunes()[-1].step == "resubmitted", "journaled as patched: the next tuner keeps waiting"


def test_the_next_tuner_finishes_a_patched_retune_and_abandons_an_unpatched_one(journal: TuneJournal) -> None:
    operator = FakeOperator()
    patched = journal.open_retune(SPEC.name, job_id(0), 30_000, 10_000, 0, "")
    operator.patch_configuration("streaming", "fleet", {INTERVAL_KEY: "10s"})  # the dead tuner's patch
    outcome = realizer(operator, journal).resume(patched, JOB)
    assert outcome.outcome == "verified" and outcome.job.job_id == job_id(1)
    assert len(operator.patches) == 1, "not patched twice"
    untouched = journal.open_retune(SPEC.name, job_id(1), 10_000, 5_000, 1, "")
    outcome = realizer(operator, journal).resume(untouched, outcome.job)
    assert outcome.outcome == "abandoned" and journal.retune(untouched.retune_id).step == "abandoned"


def test_the_status_is_read_from_spec_and_operator_status() -> None:
    status = DeploymentStatus.from_resource(FakeOperator(interval="2 min").resource)
    assert (status.upgrade_mode, status.interval_ms, status.reconciled_interval_ms) == ("savepoint", 120_000, 120_000)
    assert (status.lifecycle_state, status.job_state, status.job_id) == ("STABLE", "RUNNING", job_id(0))
    assert DeploymentStatus.from_resource({"metadata": {"name": "x"}}).upgrade_mode == "stateless", \
        "the operator's default"


def test_recovery_settings_are_patched_into_the_deployment_only_where_they_change() -> None:
    from chronos.k8s.flink_deployment import apply_configuration

    operator = FakeOperator()
    lines = {"heartbeat.interval": "500 ms", "heartbeat.timeout": "5000 ms",
             "slotmanager.redundant-taskmanager-num": "1"}
    assert apply_configuration(operator, "streaming", "fleet", lines) == lines
    assert operator.patches == [lines] and operator.resource["spec"]["flinkConfiguration"][INTERVAL_KEY] == "30s"
    operator._pending = 0
    assert apply_configuration(operator, "streaming", "fleet", lines) == {}, "in force already: no patch, no restart"
    assert len(operator.patches) == 1
