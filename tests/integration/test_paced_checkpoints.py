"""Retuning without a restart, on the real stack: chronos triggers the job's checkpoints at the cadence it
chose while the job keeps a long interval of its own (the fallback).

- A job configured at 120 s and paced at 5 s commits its exactly-once output at the paced cadence (its committed
  output's p99 follows 5 s, not 120 s); a change to 15 s is in force within one checkpoint; no restart.
- Over >= 10 cadence changes and a TaskManager kill, the counted input comes out exactly once.
- `chronos tune` SIGKILLed while pacing: the job goes on checkpointing at its own interval; the next tuner takes the
  journaled cadence over (same job, no restart, never two checkpoints in flight)."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import ExperimentInput
from chronos.stack.faults import KillTaskManager
from chronos.stack.state import StackState
from chronos.tune.journal import Cadence, TuneJournal
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.pacer import Pacer
from tests.conftest import wait_until
from tests.support.cli import submit_demo
from tests.support.committed_output import CommittedOutput
from tests.support.tuning import Tuner, cancel_all, job_name

pytestmark = pytest.mark.long(3)


@dataclass
class Seen:
    outcomes: list[str] = field(default_factory=list)
    cadences: list[Cadence] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def triggered(self, job_name: str, outcome: str) -> None:
        self.outcomes.append(outcome)

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        return None

    def cadence(self, job_name: str, entry: Cadence) -> None:
        self.cadences.append(entry)

    def message(self, text: str) -> None:
        self.messages.append(text)


@dataclass
class PacedJob:
    job_id: str
    name: str
    pacer: Pacer
    seen: Seen


@pytest.fixture(scope="module")
def paced_job(stack: StackState) -> Iterator[PacedJob]:
    """The demo job configured at 120 s, with an in-process pacer (not yet pacing) running beside it."""
    flink = FlinkRestClient(stack.rest_url)
    job_id = submit_demo(stack, "120s")
    name = job_name(stack, job_id)
    seen = Seen()
    pacer = Pacer(RestCheckpointTrigger(flink), MemoryJournal(), seen, name)
    stop = threading.Event()
    thread = threading.Thread(target=pacer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield PacedJob(job_id, name, pacer, seen)
    finally:
        stop.set()
        pacer.wake()
        thread.join(10)
        cancel_all(flink, name)
        flink.close()


def completed_triggers_ms(flink: FlinkRestClient, job_id: str, since_ms: int) -> list[int]:
    history = flink.checkpoints(job_id).history
    return sorted(e.trigger_timestamp for e in history if e.status == "COMPLETED" and e.trigger_timestamp >= since_ms)


def test_a_killed_tuner_leaves_the_job_at_its_own_interval_and_the_next_takes_its_cadence_over(
        stack: StackState, flink: FlinkRestClient, tmp_path: Path) -> None:
    job_id = submit_demo(stack, "6s")
    name = job_name(stack, job_id)
    db = tmp_path / "journal.db"
    args = ["--job", job_id, "--realize", "paced", "--strategy", "static", "--static-interval", "2s",
            "--latency-p99", "30s", "--recovery", "60s", "--startup-grace", "1ms", "--decide-every", "3s",
            "--collect-every", "1s", "--metrics-port", "-1", "--db", str(db), "--stack-dir", stack.stack_dir]
    first = second = None
    try:
        first = Tuner(*args)
        first.wait_for(lambda e: e.get("event") == "realizer" and e["realizer"] == "paced", 60)
        first.wait_for(lambda e: e.get("event") == "cadence" and e["state"] == "in force", 60)
        time.sleep(4)
        first.kill()
        killed = int(time.time() * 1000)
        wait_until(lambda: len(completed_triggers_ms(flink, job_id, killed)) >= 2, 30, what="two checkpoints unpaced")
        alone = completed_triggers_ms(flink, job_id, killed)
        assert 5.4 <= (alone[1] - alone[0]) / 1000 <= 6.6, f"at its own 6 s without a tuner: {alone}"

        second = Tuner(*args)
        taken = second.wait_for(lambda e: e.get("event") == "cadence", 60)
        assert taken["to_ms"] == 2000 and taken["job_id"] == job_id, taken
        resumed = int(time.time() * 1000)
        wait_until(lambda: len(completed_triggers_ms(flink, job_id, resumed)) >= 3, 30, what="paced again")
        again = completed_triggers_ms(flink, job_id, resumed)
        assert all((b - a) / 1000 <= 2.6 for a, b in itertools.pairwise(again[1:])), again
        second.kill()
        assert not [e for e in second.events if e.get("event") == "retune"], "taken over without a restart"
        assert flink.job(job_id).state == "RUNNING" and flink.checkpoints(job_id).counts.restored == 0
        journal = TuneJournal(db)
        assert [c.to_ms for c in journal.cadences(name)] == [2000], "taken over, not decided again"
        journal.close()
    finally:
        for tuner in (first, second):
            if tuner is not None:
                tuner.kill()
        cancel_all(flink, name)


def test_a_job_at_120s_paced_at_5s_commits_at_5s_and_a_change_to_15s_takes_one_checkpoint_no_restart(
        stack: StackState, flink: FlinkRestClient, paced_job: PacedJob) -> None:
    job_id = paced_job.job_id
    started = flink.job(job_id).start_time
    load = ExperimentInput(stack.bootstrap, "vehicle-events", "vehicle-stats", rate=300, vehicles=50,
                           run_id=uuid.uuid4().hex[:6])
    output = CommittedOutput(stack.bootstrap, "vehicle-stats")
    try:
        load.start()
        paced_job.pacer.pace(job_id, 5000, 120_000, "test: 5 s")
        wait_until(lambda: any(c.in_force_ms for c in paced_job.seen.cadences if c.to_ms == 5000), 30,
                   what="the 5 s cadence in force")
        since = int(time.time() * 1000)
        time.sleep(17)
        gap_s, p99_s = output.median_gap_s(since), output.p99_ms(since) / 1000
        assert 4.0 <= gap_s <= 6.5, f"committed output every {gap_s:.1f} s"
        assert p99_s < 15, f"p99 of committed output {p99_s:.1f} s: follows the 5 s cadence, not 120 s"
        triggers = completed_triggers_ms(flink, job_id, since)
        gaps = [(b - a) / 1000 for a, b in itertools.pairwise(triggers)]
        assert gaps and all(4.8 <= g <= 6.0 for g in gaps), gaps

        changed = int(time.time() * 1000)
        paced_job.pacer.pace(job_id, 15_000, 120_000, "test: 15 s")
        wait_until(lambda: any(c.in_force_ms for c in paced_job.seen.cadences if c.to_ms == 15_000), 20,
                   what="the 15 s cadence in force within one checkpoint")
        in_force = next(c.in_force_ms for c in paced_job.seen.cadences if c.to_ms == 15_000 and c.in_force_ms)
        assert in_force - changed <= 15_000 + 2_000
        # the checkpoint that put it in force was triggered 15 s after the last one at 5 s
        last_two = completed_triggers_ms(flink, job_id, since)[-2:]
        assert 14.5 <= (last_two[1] - last_two[0]) / 1000 <= 16.0, last_two

        detail, counts = flink.job(job_id), flink.checkpoints(job_id).counts
        assert detail.state == "RUNNING" and detail.start_time == started, "the same job, never restarted"
        assert counts.restored == 0 and not flink.exceptions(job_id).exception_history.entries, "no failover either"
        assert "failed" not in paced_job.seen.outcomes, paced_job.seen.messages
    finally:
        output.close()
        load.close()


def test_exactly_once_over_ten_cadence_changes_and_a_taskmanager_kill(
        stack: StackState, flink: FlinkRestClient, paced_job: PacedJob) -> None:
    job_id = paced_job.job_id
    counted = ExperimentInput(stack.bootstrap, "vehicle-events", "vehicle-stats", rate=500, vehicles=50,
                              run_id=uuid.uuid4().hex[:6])
    kill = KillTaskManager(stack.stack_dir_path)
    try:
        counted.start()
        for n, cadence_ms in enumerate((2000, 3000) * 5):
            paced_job.pacer.pace(job_id, cadence_ms, 120_000, f"test: change {n + 1}")
            if n == 2:
                kill.inject()  # the changes go on through the failover: nothing is triggered while it is not running
            time.sleep(2.5)
        wait_until(lambda: flink.job(job_id).all_running, 120, what="the job to run again")
        completed = flink.checkpoints(job_id).counts.completed
        wait_until(lambda: flink.checkpoints(job_id).counts.completed >= completed + 2, 30,
                   what="the restored job paced again")
        assert flink.checkpoints(job_id).latest.restored is not None, "it failed over, and was restored"
        delivery = counted.finish(timeout_s=120)
        assert delivery.ok and delivery.input_events > 5_000, delivery.summary()

        # At a 60 s cadence a restore is committed as soon as every task runs (the pacer looks every second while
        # the job is not running), not a cadence after the last checkpoint before the failure.
        paced_job.pacer.pace(job_id, 60_000, 120_000, "test: a long cadence")
        before = flink.checkpoints(job_id).latest.restored
        kill.inject()
        wait_until(lambda: flink.checkpoints(job_id).latest.restored != before, 120, what="a second restore")
        restored = flink.checkpoints(job_id).latest.restored
        assert restored is not None

        def first_commit_after_restore() -> int | None:
            done = flink.checkpoints(job_id).latest.completed
            return done.trigger_timestamp if done and done.trigger_timestamp >= restored.restore_timestamp else None

        wait_until(lambda: first_commit_after_restore() is not None, 60, what="a checkpoint after the restore")
        all_running_ms = max(t.timestamps["RUNNING"] for v in flink.job(job_id).vertices
                             for t in flink.subtask_times(job_id, v.id))
        triggered_after_s = ((first_commit_after_restore() or 0) - all_running_ms) / 1000
        assert triggered_after_s < 5, f"first checkpoint triggered {triggered_after_s:.1f} s after every task ran"
    finally:
        counted.close()
        kill.rollback()
