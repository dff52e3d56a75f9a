"""The pacer: holds a paced job's checkpoint cadence by triggering its checkpoints, in a thread of its own
(a cadence of a few seconds needs a finer clock than the tuner's collect period). Not pacing (the restart
realizer, or no cadence decided yet) it only watches: the interval measured between completed checkpoints is
worth knowing for any job.

The guarantees, and where each comes from:
- never two checkpoints in flight: the rule (`pacing.next_move`) triggers only when Flink reports none in
  progress and no trigger of its own is pending; a new tuner taking over sees a predecessor's in Flink's count;
- never a tight loop: every attempt, answered or refused or timed out, moves the next due time a whole cadence
  on; a REST outage is waited out at the rule's poll period;
- the job safe without it: pacing only ever adds checkpoints to the job's own configured interval (the
  fallback), which Flink keeps running whatever happens to chronos (Ctrl-C, crash, SIGKILL);
- a cadence change is journaled before it acts (`decided`), and `in force` when the first checkpoint it
  triggered at the new cadence completes; a new tuner takes the newest journaled cadence over, no restart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from chronos.clock import wall_ms
from chronos.errors import ChronosError
from chronos.tune.journal import Cadence, Journal
from chronos.tune.pacing import PacingState, PacingView, catching_up, next_move

TriggerState = Literal["in-progress", "completed", "failed"]
Outcome = Literal["completed", "failed", "skipped-in-flight", "skipped-not-running"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "failed", "skipped-in-flight", "skipped-not-running")
SKIPPED: dict[str, Outcome] = {"skip-in-flight": "skipped-in-flight", "skip-not-running": "skipped-not-running"}
WATCH_EVERY_S = 2.0  # not pacing: how often to look for newly completed checkpoints


@dataclass(frozen=True)
class TriggerOutcome:
    state: TriggerState
    checkpoint_id: int | None = None
    failure: str | None = None


class CheckpointTrigger(Protocol):
    """What pacing needs of Flink: `chronos.flink.job_control.RestCheckpointTrigger` over the REST API (contract:
    tests/contracts/test_checkpoint_trigger_contract.py)."""

    def pacing_view(self, job_id: str) -> PacingView: ...
    def trigger_checkpoint(self, job_id: str) -> str: ...
    def trigger_outcome(self, job_id: str, trigger_id: str) -> TriggerOutcome: ...


class PacingObserver(Protocol):
    def triggered(self, job_name: str, outcome: Outcome) -> None: ...
    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        """A checkpoint completed `effective_s` after the one before; `error_s`: |effective - cadence| when both
        were at the cadence in force (None: a cadence change lies between them)."""
        ...
    def cadence(self, job_name: str, entry: Cadence) -> None:
        """A cadence was decided, taken over, or came in force."""
        ...
    def message(self, text: str) -> None: ...


@dataclass(frozen=True)
class PacerStats:
    job_id: str | None
    cadence_ms: int | None
    in_force: bool
    effective_s: float | None  # between the two newest completed checkpoints
    error_s: float | None
    counts: tuple[tuple[Outcome, int], ...]


class Pacer:
    def __init__(
        self,
        control: CheckpointTrigger,
        journal: Journal,
        observer: PacingObserver,
        job_name: str,
        *,
        wall_ms: Callable[[], int] = wall_ms,
        trigger_timeout_s: float = 120.0,
    ) -> None:
        self._control = control
        self._journal = journal
        self._observer = observer
        self._job_name = job_name
        self._wall_ms = wall_ms
        self._trigger_timeout_ms = int(trigger_timeout_s * 1000)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._job_id: str | None = None
        self._state: PacingState | None = None
        self._entry: Cadence | None = None
        self._pending: tuple[str, int] | None = None  # (trigger id, requested at ms)
        self._changed_ms = 0  # when the cadence last changed (pacing error only between checkpoints after it)
        self._last_seen: tuple[int, int] | None = None  # (id, trigger ms) of the newest completed checkpoint seen
        self._effective_s: float | None = None
        self._error_s: float | None = None
        self._counts: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
        self._failing_since: int | None = None

    # -- what the tuner asks ----------------------------------------------------------------------
    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int, explanation: str) -> Cadence:
        """Hold `job_id` at `cadence_ms` from now on: journaled first, effective at its next checkpoint."""
        with self._lock:
            before = self._state.cadence_ms if self._state is not None and self._job_id == job_id else None
            entry = self._journal.open_cadence(self._job_name, job_id, before, cadence_ms, fallback_ms,
                                               self._wall_ms(), explanation)
            self._hold(job_id, entry)
        self._observer.cadence(self._job_name, entry)
        self._wake.set()
        return entry

    def take_over(self, job_id: str) -> Cadence | None:
        """Go on with the newest journaled cadence of this job (a previous tuner's), if there is one."""
        held = self._journal.cadences(self._job_name)
        if not held:
            return None
        with self._lock:
            self._hold(job_id, held[-1])
        self._observer.cadence(self._job_name, held[-1])
        self._wake.set()
        return held[-1]

    def follow(self, job_id: str) -> None:
        """Watch this job (at start, or after a restart replaced it); a paced one goes on at the same cadence."""
        with self._lock:
            if self._job_id != job_id:
                self._job_id, self._pending, self._last_seen = job_id, None, None
                if self._state is not None:
                    self._state = replace(self._state, following_since_ms=self._wall_ms(), last_attempt_ms=None,
                                          pending=False)
        self._wake.set()

    def wake(self) -> None:
        """Look again now (a stop was requested, or something changed)."""
        self._wake.set()

    @property
    def cadence_ms(self) -> int | None:
        with self._lock:
            return None if self._state is None else self._state.cadence_ms

    def stats(self) -> PacerStats:
        with self._lock:
            return PacerStats(self._job_id, None if self._state is None else self._state.cadence_ms,
                              self._entry is not None and self._entry.in_force_ms is not None,
                              self._effective_s, self._error_s, tuple(self._counts.items()))

    def _hold(self, job_id: str, entry: Cadence) -> None:
        now = self._wall_ms()
        if self._job_id != job_id or self._state is None:
            if self._job_id != job_id:
                self._pending, self._last_seen = None, None
            self._state = PacingState(entry.to_ms, following_since_ms=now, fallback_ms=entry.fallback_ms)
        else:
            self._state = replace(self._state, cadence_ms=entry.to_ms, fallback_ms=entry.fallback_ms)
        self._job_id, self._entry, self._changed_ms = job_id, entry, now

    # -- the thread -------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            wait_s = self.step()
            self._wake.wait(wait_s)
            self._wake.clear()

    def step(self) -> float:
        """One look at the job: follow a pending trigger, note completions, trigger if due. Seconds to sleep."""
        with self._lock:
            job_id, watching = self._job_id, self._state is None
        if job_id is None:
            return 1.0
        try:
            self._follow_pending(job_id)
            view = self._control.pacing_view(job_id)
        except ChronosError as exc:
            if not watching:
                self._unreadable(exc)
            return WATCH_EVERY_S if watching else 1.0
        if self._failing_since is not None:
            self._failing_since = None
            self._observer.message(f"pacing of {job_id}: Flink answers again")
        self._note_completion(view)
        with self._lock:
            if self._job_id != job_id:
                return 0.0  # changed meanwhile: look again at once
            if self._state is None:
                return WATCH_EVERY_S
            state = replace(self._state, pending=self._pending is not None)
            move = next_move(view, state)
            if move.counts_as_skip and state.skipped_for_ms != move.due_ms:
                self._state = replace(self._state, skipped_for_ms=move.due_ms)
                self._count(SKIPPED[move.move])
        if move.move == "trigger":
            self._trigger(job_id)
        return max(0.0, (move.wake_ms - view.at_ms) / 1000)

    def _count(self, outcome: Outcome) -> None:
        self._counts[outcome] += 1
        self._observer.triggered(self._job_name, outcome)

    def _trigger(self, job_id: str) -> None:
        now = self._wall_ms()
        with self._lock:
            if self._state is None:
                return
            self._state = replace(self._state, last_attempt_ms=now)
        try:
            trigger_id = self._control.trigger_checkpoint(job_id)
        except ChronosError as exc:
            with self._lock:
                self._count("failed")
            self._observer.message(f"checkpoint trigger of {job_id} refused ({exc}); next try in one period")
            return
        with self._lock:
            self._pending = (trigger_id, now)

    def _follow_pending(self, job_id: str) -> None:
        with self._lock:
            pending = self._pending
        if pending is None:
            return
        trigger_id, requested_ms = pending
        outcome = self._control.trigger_outcome(job_id, trigger_id)
        if outcome.state == "in-progress" and self._wall_ms() - requested_ms < self._trigger_timeout_ms:
            return
        in_force: Cadence | None = None
        with self._lock:
            self._pending = None
            if outcome.state == "completed":
                self._count("completed")
                if self._entry is not None and self._entry.in_force_ms is None and requested_ms >= self._changed_ms:
                    self._entry = in_force = self._journal.cadence_in_force(self._entry.cadence_id, self._wall_ms())
            else:
                self._count("failed")
        if outcome.state != "completed":
            why = outcome.failure or f"no answer in {self._trigger_timeout_ms / 1000:.0f} s"
            self._observer.message(f"triggered checkpoint of {job_id} failed ({why[:200]}); next try in one period")
        if in_force is not None:
            self._observer.cadence(self._job_name, in_force)

    def _note_completion(self, view: PacingView) -> None:
        if view.last_completed_id is None or view.last_completed_trigger_ms is None:
            return
        newest = (view.last_completed_id, view.last_completed_trigger_ms)
        in_force: Cadence | None = None
        with self._lock:
            previous, self._last_seen = self._last_seen, newest
            if previous is None or newest[0] <= previous[0]:
                return
            effective_s = (newest[1] - previous[1]) / 1000
            state = self._state
            cadence = state.cadence_ms if state is not None else None
            at_cadence = previous[1] >= self._changed_ms and not catching_up(view, previous[1]) \
                and not catching_up(view, newest[1])
            error_s = abs(effective_s - cadence / 1000) if cadence and at_cadence else None
            self._effective_s, self._error_s = effective_s, error_s
            held_by_flink = state is not None and state.fallback_ms is not None and state.cadence_ms >= state.fallback_ms
            if held_by_flink and self._entry is not None and self._entry.in_force_ms is None \
                    and newest[1] >= self._changed_ms:
                self._entry = in_force = self._journal.cadence_in_force(self._entry.cadence_id, self._wall_ms())
        self._observer.completed(self._job_name, effective_s, error_s)
        if in_force is not None:
            self._observer.cadence(self._job_name, in_force)

    def _unreadable(self, exc: ChronosError) -> None:
        if self._failing_since is None:
            self._failing_since = self._wall_ms()
            self._observer.message(f"pacing paused: {exc}")
