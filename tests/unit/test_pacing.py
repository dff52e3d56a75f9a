"""Pacing a job's checkpoints: the rule (when the next one is due, never two in flight, nothing while the job
is not running) and the pacer that applies it (a refused or lost trigger is counted and retried a period later,
never in a tight loop; a cadence change is journaled and in force at its first checkpoint; a new tuner takes the
journaled cadence over), on a fake of our own CheckpointTrigger wrapper: a job whose checkpoints take `duration_ms`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from chronos.tune.journal import Cadence
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.pacer import Pacer
from chronos.tune.pacing import CATCH_UP_WINDOW_MS, PacingState, PacingView, next_move
from tests.support.fake_checkpoint_trigger import FakeJob


def view(at: int, *, running: bool = True, in_progress: int = 0, last: int | None = 1000) -> PacingView:
    return PacingView(at, running, in_progress, None if last is None else 1, last)


def test_the_next_checkpoint_is_due_a_cadence_after_the_newest_completed_one() -> None:
    state = PacingState(5000, following_since_ms=0)
    assert next_move(view(4000), state).move == "wait"
    assert next_move(view(4000), state).wake_ms == 5000, "wakes at the due time when it is within a second"
    assert next_move(view(6000), state).move == "trigger"


def test_a_refused_attempt_moves_the_due_time_a_whole_cadence_on() -> None:
    state = PacingState(5000, following_since_ms=0, last_attempt_ms=6000)
    assert next_move(view(7000), state).move == "wait"
    assert next_move(view(11_000), state).move == "trigger"


def test_never_a_second_checkpoint_in_flight_and_nothing_while_the_job_is_not_running() -> None:
    state = PacingState(5000, following_since_ms=0)
    assert next_move(view(7000, in_progress=1), state).move == "skip-in-flight"
    assert next_move(view(7000), PacingState(5000, 0, pending=True)).move == "skip-in-flight"
    assert next_move(view(7000, running=False), state).move == "skip-not-running"


def test_at_a_cadence_no_shorter_than_the_jobs_own_interval_flinks_timer_does_it_alone() -> None:
    state = PacingState(10_000, following_since_ms=0, fallback_ms=10_000)
    assert next_move(view(60_000), state).move == "wait"


def test_a_job_with_no_checkpoint_yet_is_due_a_cadence_after_pacing_began() -> None:
    state = PacingState(5000, following_since_ms=3000)
    assert next_move(view(7000, last=None), state).move == "wait"
    assert next_move(view(8000, last=None), state).move == "trigger"


def restored(at: int, restored_ms: int, *, last: int | None = 1000, running: bool = True) -> PacingView:
    return PacingView(at, running, 0, None if last is None else 1, last, restored_ms)


def test_after_a_restore_the_replayed_output_is_committed_as_soon_as_every_task_runs() -> None:
    """The exactly-once sink shows the replay only at a commit: a checkpoint is due at the restore, not a
    cadence after the last one before the failure."""
    state = PacingState(30_000, following_since_ms=0)
    assert next_move(restored(21_000, 20_000), state).move == "trigger"
    assert next_move(restored(20_500, 20_000, running=False), state).move == "skip-not-running"


def test_while_a_restored_job_catches_up_the_cadence_is_at_most_a_second_then_back_to_its_own() -> None:
    state = PacingState(30_000, following_since_ms=0, last_attempt_ms=21_000)
    after_first = restored(21_500, 20_000, last=21_000)
    assert next_move(after_first, state).move == "wait" and next_move(after_first, state).due_ms == 22_000
    assert next_move(restored(22_100, 20_000, last=21_000), state).move == "trigger"
    late = restored(20_000 + CATCH_UP_WINDOW_MS + 100, 20_000, last=29_000)
    assert next_move(late, replace(state, last_attempt_ms=29_000)).due_ms == 59_000, "the window is over"


def test_a_cadence_flinks_timer_holds_still_gets_the_commit_after_a_restore() -> None:
    state = PacingState(10_000, following_since_ms=0, fallback_ms=10_000)
    assert next_move(restored(21_000, 20_000), state).move == "trigger"
    assert next_move(restored(60_000, 20_000, last=55_000), state).move == "wait", "outside the window: Flink's own"


@dataclass
class Seen:
    outcomes: list[str] = field(default_factory=list)
    errors: list[float | None] = field(default_factory=list)
    cadences: list[Cadence] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def triggered(self, job_name: str, outcome: str) -> None:
        self.outcomes.append(outcome)

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        self.errors.append(error_s)

    def cadence(self, job_name: str, entry: Cadence) -> None:
        self.cadences.append(entry)

    def message(self, text: str) -> None:
        self.messages.append(text)


def run(pacer: Pacer, job: FakeJob, until_ms: int) -> int:
    """Step the pacer on the fake clock, sleeping what it asks; the number of steps."""
    steps = 0
    while job.now < until_ms:
        wait_s = pacer.step()
        job.now += max(1, int(wait_s * 1000))
        steps += 1
    return steps


def make(job: FakeJob, journal: MemoryJournal | None = None) -> tuple[Pacer, Seen, MemoryJournal]:
    seen, journal = Seen(), journal or MemoryJournal()
    return Pacer(job, journal, seen, "fleet", wall_ms=lambda: job.now, trigger_timeout_s=10.0), seen, journal


def test_checkpoints_come_at_the_cadence_and_a_change_is_in_force_at_its_first_checkpoint() -> None:
    job = FakeJob()
    pacer, seen, journal = make(job)
    pacer.pace("j1", 5000, 120_000, "pace at 5 s")
    run(pacer, job, 30_000)
    gaps = [b[1] - a[1] for a, b in zip(job.completed[1:], job.completed[2:], strict=False)]
    assert gaps and all(5000 <= g <= 5300 for g in gaps), gaps
    assert journal.cadences("fleet")[-1].in_force_ms is not None
    pacer.pace("j1", 15_000, 120_000, "lengthen")
    changed = job.now
    run(pacer, job, 80_000)
    after = [t for _, t in job.completed if t > changed]
    assert all(15_000 <= b - a <= 15_300 for a, b in itertools.pairwise(after))
    entry = journal.cadences("fleet")[-1]
    assert (entry.from_ms, entry.to_ms) == (5000, 15_000)
    assert entry.in_force_ms is not None and entry.in_force_ms - changed <= 15_000 + 300, "within one checkpoint"
    assert max(e for e in seen.errors if e is not None) <= 0.3
    assert seen.outcomes.count("failed") == 0


def test_a_job_not_running_when_due_counts_as_skipped_not_running() -> None:
    job = FakeJob(running=False)
    pacer, seen, _ = make(job)
    pacer.pace("j1", 5000, 120_000, "pace")
    run(pacer, job, 20_000)
    assert job.triggers == [] and seen.outcomes == ["skipped-not-running"]


def test_a_refused_trigger_is_counted_and_retried_a_period_later_never_in_a_tight_loop() -> None:
    job = FakeJob(refuse=True)
    pacer, seen, _ = make(job)
    pacer.pace("j1", 5000, 120_000, "pace")
    steps = run(pacer, job, 60_000)
    assert 11 <= len(job.triggers) <= 13, "one attempt per period"
    assert all(b - a >= 5000 for a, b in zip(job.triggers, job.triggers[1:], strict=False))
    assert seen.outcomes.count("failed") == len(job.triggers)
    assert steps < 200, "it sleeps between looks"


def test_a_trigger_with_no_answer_is_a_failure_after_its_timeout_and_none_is_sent_while_flink_has_one_in_flight() -> None:
    job = FakeJob(never_complete=True)
    pacer, seen, _ = make(job)
    pacer.pace("j1", 5000, 120_000, "pace")
    run(pacer, job, 30_000)
    assert len(job.triggers) == 1, "Flink still reports the first in flight"
    assert "failed" in seen.outcomes and "skipped-in-flight" in seen.outcomes


def test_a_periodic_checkpoint_in_flight_is_skipped_once_per_due_time_and_a_stopped_job_is_not_triggered() -> None:
    job = FakeJob(periodic_in_flight=True)
    pacer, seen, _ = make(job)
    pacer.pace("j1", 5000, 120_000, "pace")
    run(pacer, job, 20_000)
    assert job.triggers == [] and seen.outcomes == ["skipped-in-flight"], "counted once, not per look"
    job.periodic_in_flight, job.running = False, False
    run(pacer, job, 40_000)
    assert job.triggers == [], "the job is not running: nothing triggered"
    job.running = True
    run(pacer, job, 50_000)
    assert job.triggers, "a restored job is paced again"


def test_an_unreachable_cluster_pauses_pacing_said_once_each_way() -> None:
    job = FakeJob(unreachable=True)
    pacer, seen, _ = make(job)
    pacer.pace("j1", 5000, 120_000, "pace")
    run(pacer, job, 20_000)
    assert job.triggers == [] and len(seen.messages) == 1 and "pacing paused" in seen.messages[0]
    job.unreachable = False
    run(pacer, job, 30_000)
    assert job.triggers and seen.messages[-1].endswith("Flink answers again")


def test_a_new_tuner_takes_the_journaled_cadence_over_and_a_replaced_job_is_followed() -> None:
    job = FakeJob()
    first, _, journal = make(job)
    first.pace("j1", 4000, 120_000, "pace")
    run(first, job, 10_000)
    second, _seen, _ = make(job, journal)
    held = second.take_over("j1")
    assert held is not None and held.to_ms == 4000 and second.cadence_ms == 4000
    run(second, job, 30_000)
    assert all(b - a <= 4300 for a, b in zip(job.triggers, job.triggers[1:], strict=False))
    second.follow("j2")
    assert second.stats().job_id == "j2" and second.cadence_ms == 4000


def test_nothing_is_taken_over_when_no_cadence_was_journaled() -> None:
    pacer, _, _ = make(FakeJob())
    assert pacer.take_over("j1") is None and pacer.cadence_ms is None


def test_not_pacing_it_only_watches_the_interval_between_completed_checkpoints() -> None:
    job = FakeJob()
    pacer, seen, _ = make(job)
    pacer.follow("j1")
    for at in (10_000, 20_000, 30_000):  # the job's own periodic checkpoints
        job.completed.append((job.completed[-1][0] + 1, at))
        job.now = at + 500
        pacer.step()
    assert job.triggers == [] and seen.outcomes == []
    assert pacer.stats().effective_s == 10.0 and pacer.stats().error_s is None


def test_a_cadence_at_the_jobs_own_interval_is_in_force_at_its_next_periodic_checkpoint() -> None:
    job = FakeJob()
    pacer, _, journal = make(job)
    pacer.follow("j1")
    pacer.step()
    pacer.pace("j1", 10_000, 10_000, "as the job's own")
    job.completed.append((2, 10_000))
    job.now = 10_500
    pacer.step()
    assert job.triggers == [] and journal.cadences("fleet")[-1].in_force_ms == 10_500
