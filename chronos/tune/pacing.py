"""When to trigger the next checkpoint of a paced job: a pure rule over what Flink reports and what the
pacer did, so the pacer's thread only reads, applies and sleeps.

Why pace at all: Flink cannot change a running job's checkpoint interval, but it checkpoints on request
(`POST /jobs/:jobid/checkpoints`, FLINK-27101), and a triggered checkpoint is an ordinary one (the
exactly-once Kafka sink commits on it; a failover restores from it; tests/integration/test_paced_checkpoints.py
checks both). So the job keeps a long configured interval (the fallback) and chronos triggers a checkpoint
whenever its chosen cadence has passed since the last completed one (or since its own last attempt, so a
refused trigger is retried a period later, never in a tight loop). Never a second checkpoint in flight: Flink's own
in-progress count says whether one is (a periodic one, a previous tuner's trigger, ours); nothing while the
job or any of its tasks is not RUNNING (a trigger would fail, and a failover restores on its own).

After a restore (a failover, or a restart from a savepoint) the output of the replay and of the catch-up waits
for a commit: an exactly-once sink shows it only when a checkpoint completes. Measured on the local stack (demo
job, 2,000 ev/s, 5 s interval, six worst-case TaskManager kills, bench/results/recovery_trace.json): the backlog
was drained within 2 s of RUNNING every time, yet the output's p99 came back in band only at the second commit
after the restore, 4-11 s later, as Flink's timer placed them. So the first checkpoint after a restore is due as
soon as every task runs, and for `CATCH_UP_WINDOW_MS` after the restore the cadence is at most
`CATCH_UP_CADENCE_MS` (never two in flight): the late output is committed at once, and the first commit of
on-time output follows within a second of the drain. Its cost: up to ten extra checkpoints per failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class PacingView:
    """The paced job as Flink reports it, read at `at_ms` (wall clock, the clock of Flink's timestamps)."""

    at_ms: int
    running: bool  # the job RUNNING and every task of it RUNNING
    in_progress: int  # checkpoints in flight, whoever triggered them
    last_completed_id: int | None
    last_completed_trigger_ms: int | None  # when the newest completed checkpoint was triggered
    restored_ms: int | None = None  # when Flink last restored the job (from a checkpoint or a savepoint)


@dataclass(frozen=True)
class PacingState:
    """What the pacer itself knows, beyond Flink: the cadence, since when it follows this job, its last attempt."""

    cadence_ms: int
    following_since_ms: int
    fallback_ms: int | None = None  # the job's own interval: at a cadence no shorter, Flink's timer does it alone
    last_attempt_ms: int | None = None  # its newest trigger request, answered or not
    pending: bool = False  # a trigger of its own not yet completed or failed
    skipped_for_ms: int | None = None  # the due time already counted as skipped (counted once per period)


Move = Literal["trigger", "wait", "skip-in-flight", "skip-not-running"]


@dataclass(frozen=True)
class PacingMove:
    move: Move
    due_ms: int  # when the next checkpoint is due
    wake_ms: int  # when to look again

    @property
    def counts_as_skip(self) -> bool:
        return self.move in ("skip-in-flight", "skip-not-running")


CATCH_UP_CADENCE_MS = 1000  # the longest cadence while a restored job catches up ...
CATCH_UP_WINDOW_MS = 10_000  # ... for this long after the restore (the drains measured took under 2 s)
POLL_MS = 250  # how often to look while a checkpoint is due but one is in flight
NOT_RUNNING_POLL_MS = 1000  # ... or the job is not running (a failover takes seconds)
IDLE_LOOK_MS = 1000  # the longest sleep before a due time (a new cadence or a takeover shows within it)


def catching_up(view: PacingView, at_ms: int | None = None) -> bool:
    """Whether `at_ms` (default: the view's moment) lies within the catch-up window of the job's latest restore."""
    at = view.at_ms if at_ms is None else at_ms
    return view.restored_ms is not None and 0 <= at - view.restored_ms < CATCH_UP_WINDOW_MS


def cadence_now(view: PacingView, state: PacingState) -> int:
    return min(state.cadence_ms, CATCH_UP_CADENCE_MS) if catching_up(view) else state.cadence_ms


def _last_ms(view: PacingView, state: PacingState) -> int:
    """The latest of: the newest completed checkpoint's trigger, the pacer's own last attempt, and (with neither)
    the moment it began following the job."""
    known = [t for t in (view.last_completed_trigger_ms, state.last_attempt_ms) if t is not None]
    return max(known) if known else state.following_since_ms


def restore_uncommitted(view: PacingView, state: PacingState) -> bool:
    """The job was restored and nothing has been checkpointed (or attempted) since: its replayed output waits."""
    return view.restored_ms is not None and _last_ms(view, state) < view.restored_ms


def due_ms(view: PacingView, state: PacingState) -> int:
    """A cadence after `_last_ms`; at the restore itself while the restore is uncommitted."""
    last = _last_ms(view, state)
    if view.restored_ms is not None and last < view.restored_ms:  # restore_uncommitted
        return view.restored_ms
    return last + cadence_now(view, state)


def next_move(view: PacingView, state: PacingState) -> PacingMove:
    due = due_ms(view, state)
    now = view.at_ms
    if state.fallback_ms is not None and cadence_now(view, state) >= state.fallback_ms \
            and not restore_uncommitted(view, state):
        return PacingMove("wait", due, now + IDLE_LOOK_MS)  # triggers would only crowd Flink's own timer
    if now < due:
        return PacingMove("wait", due, min(due, now + IDLE_LOOK_MS))
    if not view.running:
        return PacingMove("skip-not-running", due, now + NOT_RUNNING_POLL_MS)
    if view.in_progress > 0 or state.pending:
        return PacingMove("skip-in-flight", due, now + POLL_MS)
    return PacingMove("trigger", due, now + POLL_MS)
