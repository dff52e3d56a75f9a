"""Realizing a retune, and finishing one a dead tuner left behind, against a fake cluster that keeps
the facts the guarantees are about: which jobs live, from which savepoint each was restored.
The same steps run against real Flink in tests/integration/test_tune.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.model import CheckpointSettings, JobSpec
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob
from tests.support.fake_cluster import Crash, FakeCluster

Setup = tuple["FakeCluster", TuneJournal, TunedJob]
SPEC = JobSpec("vehicle-stats", "/jobs/vehicle_stats_job.py")


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    cluster = FakeCluster()
    job_id = cluster.start(SPEC.name, 30_000)
    return cluster, TuneJournal(tmp_path / "chronos.db"), TunedJob(job_id, SPEC, CheckpointSettings(30_000))


def retuner(cluster: FakeCluster, journal: TuneJournal, **kwargs: object) -> Retuner:
    return Retuner(cluster, journal, wall_ms=cluster.tick, sleep=lambda s: None, settle_timeout_s=0, **kwargs)  # type: ignore[arg-type]


def test_a_retune_walks_every_step_and_leaves_one_job_with_the_new_interval(setup: Setup) -> None:
    cluster, journal, job = setup
    replaced: list[tuple[str, str]] = []
    outcome = retuner(cluster, journal, on_replaced=lambda old, new, sp: replaced.append((old.job_id, new.job_id))) \
        .retune(job, 10_000, "recovery binds")
    assert outcome.outcome == "verified" and outcome.job.settings.interval_ms == 10_000
    assert cluster.live() == [outcome.job.job_id]
    assert cluster.jobs[outcome.job.job_id].restored_from == cluster.jobs[job.job_id].savepoints[-1]
    assert replaced == [(job.job_id, outcome.job.job_id)]
    entry = journal.retunes()[-1]
    assert (entry.step, entry.from_interval_ms, entry.to_interval_ms) == ("verified", 30_000, 10_000)
    assert entry.savepoint and entry.new_job_id == outcome.job.job_id and entry.downtime_s is not None
    assert journal.unfinished(SPEC.name) is None


def test_a_failed_resubmission_is_retried_then_the_previous_interval_comes_back_from_the_same_savepoint(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.failing_submissions = 3
    outcome = retuner(cluster, journal, submit_attempts=3).retune(job, 10_000, "")
    assert outcome.outcome == "rolled-back" and outcome.job.settings.interval_ms == 30_000
    assert cluster.submissions == 4
    assert cluster.live() == [outcome.job.job_id]
    assert cluster.jobs[outcome.job.job_id].restored_from == cluster.jobs[job.job_id].savepoints[-1]
    assert journal.retunes()[-1].attempts == 4


def test_one_retry_is_enough_when_the_cluster_recovers(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.failing_submissions = 1
    outcome = retuner(cluster, journal).retune(job, 10_000, "")
    assert outcome.outcome == "verified" and cluster.submissions == 2


def test_a_job_that_dies_restoring_is_replaced_by_the_previous_interval(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.fail_on_restore = {10_000}
    outcome = retuner(cluster, journal).retune(job, 10_000, "")
    assert outcome.outcome == "rolled-back" and cluster.jobs[outcome.job.job_id].interval_ms == 30_000
    assert cluster.live() == [outcome.job.job_id]


def test_a_tuner_killed_after_the_savepoint_is_finished_by_the_next_from_that_savepoint(setup: Setup) -> None:
    cluster, journal, job = setup
    class DiesBeforeSubmitting(Retuner):
        def _submit(self, entry, job):  # type: ignore[no-untyped-def]
            raise Crash

    with pytest.raises(Crash):
        DiesBeforeSubmitting(cluster, journal, wall_ms=cluster.tick).retune(job, 10_000, "")
    assert cluster.live() == [], "the job is stopped ..."
    pending = journal.unfinished(SPEC.name)
    assert pending is not None and pending.step == "savepoint" and pending.savepoint, "... with its savepoint on record"
    cluster.crash_after = None
    outcome = retuner(cluster, journal).resume(pending, job)
    assert outcome.outcome == "verified" and cluster.live() == [outcome.job.job_id]
    assert cluster.jobs[outcome.job.job_id].restored_from == pending.savepoint
    assert cluster.jobs[outcome.job.job_id].interval_ms == 10_000


def test_a_submission_whose_reply_was_lost_is_adopted_not_repeated(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.crash_after = "submit"
    with pytest.raises(Crash):
        retuner(cluster, journal).retune(job, 10_000, "")
    assert len(cluster.live()) == 1
    cluster.crash_after = None
    pending = journal.unfinished(SPEC.name)
    assert pending is not None and pending.step == "savepoint"
    outcome = retuner(cluster, journal).resume(pending, job)
    assert cluster.submissions == 1, "never started twice"
    assert cluster.live() == [outcome.job.job_id] and "adopted" in journal.retunes()[-1].note


def test_a_tuner_killed_during_the_stop_uses_the_savepoint_flink_recorded(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.crash_after = "stop"
    with pytest.raises(Crash):
        retuner(cluster, journal).retune(job, 10_000, "")
    cluster.crash_after = None
    pending = journal.unfinished(SPEC.name)
    assert pending is not None and pending.step == "decided" and pending.savepoint is None
    outcome = retuner(cluster, journal).resume(pending, job)
    assert outcome.outcome == "verified"
    assert cluster.jobs[outcome.job.job_id].restored_from == cluster.jobs[job.job_id].savepoints[-1]


def test_a_retune_that_never_stopped_the_job_is_abandoned_and_the_job_left_alone(setup: Setup) -> None:
    cluster, journal, job = setup
    pending = journal.open_retune(SPEC.name, job.job_id, 30_000, 10_000, cluster.tick(), "")
    outcome = retuner(cluster, journal).resume(pending, job)
    assert outcome.outcome == "abandoned" and outcome.job == job
    assert cluster.live() == [job.job_id] and cluster.submissions == 0


def test_the_journal_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "chronos.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    from chronos.errors import InvalidInput

    with pytest.raises(InvalidInput, match="not a chronos tune database"):
        TuneJournal(bad)


def test_a_tuner_killed_on_the_way_back_goes_on_back_not_forward(setup: Setup) -> None:
    cluster, journal, job = setup
    cluster.failing_submissions = 3

    class DiesRollingBack(Retuner):
        def _adoptable(self, entry):  # type: ignore[no-untyped-def]
            if entry.rolling_back:
                raise Crash
            return super()._adoptable(entry)

    with pytest.raises(Crash):
        DiesRollingBack(cluster, journal, wall_ms=cluster.tick, sleep=lambda s: None).retune(job, 10_000, "")
    pending = journal.unfinished(SPEC.name)
    assert pending is not None and pending.step == "rolling-back" and pending.interval_to_submit_ms == 30_000
    outcome = retuner(cluster, journal).resume(pending, job)
    assert outcome.outcome == "rolled-back" and cluster.jobs[outcome.job.job_id].interval_ms == 30_000


def test_a_job_already_stopped_with_a_savepoint_is_started_again_through_the_journal(setup: Setup) -> None:
    cluster, journal, job = setup
    savepoint = cluster.stop_with_savepoint(job.job_id)
    outcome = retuner(cluster, journal).restart_stopped(job, 10_000, savepoint, "by hand")
    assert outcome.outcome == "verified" and cluster.jobs[outcome.job.job_id].restored_from == savepoint
    assert [(r.step, r.savepoint) for r in journal.retunes()] == [("verified", savepoint)]


def test_a_journal_from_before_rollback_steps_reads_its_rollbacks_as_steps(tmp_path: Path) -> None:
    from chronos.sqlite_schema import VersionedDatabase
    from chronos.tune.journal import MIGRATIONS

    old = VersionedDatabase(tmp_path / "old.db", "chronos_tune_meta", MIGRATIONS[:3], "tune")
    with old.transaction() as db:
        for step, note in (("savepoint", "rollback: j2 failed"), ("resubmitted", "rollback"), ("savepoint", "")):
            db.execute("INSERT INTO chronos_retunes (job_name, old_job_id, from_interval_ms, to_interval_ms, step, "
                       "decided_ms, updated_ms, note) VALUES ('j', 'j1', 30000, 10000, ?, 0, 0, ?)", (step, note))
    old.close()
    steps = [(r.step, r.interval_to_submit_ms) for r in TuneJournal(tmp_path / "old.db").retunes()]
    assert steps == [("rolling-back", 30_000), ("rollback-resubmitted", 30_000), ("savepoint", 10_000)]
