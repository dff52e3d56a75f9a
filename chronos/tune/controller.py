"""Many jobs, one process (`chronos tune --jobs`): each job keeps its own loop (its state, journal entries, models
and realization, `chronos.tune.loop`); the controller only says when each one steps, and keeps one job's trouble
from reaching the others.

Why a schedule over a bounded pool of worker threads rather than a thread per job: a step is mostly waiting on a
REST call or a broker, so a few workers keep tens of jobs on their cadence, and the pool bounds what runs at once
(fifty jobs do not make fifty REST calls in the same millisecond). A job's step is never run twice at once: one
still in flight when its next turn comes (a REST timeout, a retune that takes minutes) is skipped, that job alone
falls behind, and the other jobs' steps go to the other workers. Every step's start is measured against when it was
due: the lateness the controller reports is how well the cadence holds.

A job leaves when it says it has ended (cancelled or finished from outside chronos: `Member.ended`) or when it is
removed (the jobs file lost it); either way its own resources are closed after its last step, and nothing of the
other jobs is touched. Anything a job's step raises is said, with the job's name, and the job steps again next
turn: the loop itself already turns every failure of a source into a missing reading. A job that cannot even be
started (no such job, a job file that does not match it) is let go at once, said why.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from chronos.model import describe

CLOSING_AT_ONCE = 16  # jobs closed side by side when the controller stops
LATENESS_KEPT = 20_000  # step start lateness samples kept for the percentile (a bounded memory)


class Member(Protocol):
    """One job the controller steps (`chronos.tune.tuned_member.TunedMember`; fakes in the unit tests)."""

    name: str

    def start(self) -> None:
        """Before the first step: finish what an earlier tuner left, take a journaled cadence over."""
        ...

    def step(self) -> None: ...

    def ended(self) -> str | None:
        """Why the job is no more to be tuned (cancelled from outside, say), or None."""
        ...

    def close(self) -> None:
        """Stop what the job's tuning started (its pacer, its collector's clients); the job itself runs on."""
        ...


class FleetObserver(Protocol):
    def joined(self, name: str) -> None: ...
    def left(self, name: str, why: str) -> None: ...
    def trouble(self, name: str, error: str) -> None:
        """A job's step (or start) raised: said; the job steps again next turn."""
        ...


@dataclass(frozen=True)
class ControllerSettings:
    step_every_s: float = 5.0  # each job's collection cadence (its loop decides every decide_every_s of it)
    workers: int = 8  # steps run at once, across all jobs


@dataclass
class _Slot:
    member: Member
    started: bool = False
    busy: bool = False  # a step of it is queued or running
    leaving: str | None = None  # why it leaves once its step in flight is done
    steps: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class Lateness:
    """How late the steps started against their turn: the cadence held, or not."""

    steps: int
    skipped: int  # turns a job lost because its previous step was still running
    p50_s: float
    p99_s: float
    max_s: float


@dataclass
class Controller:
    settings: ControllerSettings
    observer: FleetObserver
    clock: Callable[[], float] = time.monotonic
    _slots: dict[str, _Slot] = field(default_factory=dict)
    _due: list[tuple[float, int, str]] = field(default_factory=list)
    _seq: int = 0
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _lateness: deque[float] = field(default_factory=lambda: deque(maxlen=LATENESS_KEPT))
    _steps: int = 0
    _skipped: int = 0

    # -- the set of jobs: may change from any thread while `run` runs -------------------------------------
    def add(self, member: Member) -> None:
        """Tune one more job from its next turn (now); a name already tuned is refused (remove it first)."""
        with self._lock:
            if member.name in self._slots:
                raise ValueError(f"job {member.name} is tuned already")
            self._slots[member.name] = _Slot(member)
            self._schedule(member.name, self.clock())
            self._lock.notify_all()
        self.observer.joined(member.name)

    def remove(self, name: str, why: str) -> None:
        """Let a job go: closed now if no step of it runs, else as soon as that step is done."""
        with self._lock:
            slot = self._slots.get(name)
            if slot is None or slot.leaving is not None:
                return
            slot.leaving = why
            busy = slot.busy
            if not busy:
                del self._slots[name]
        if not busy:
            self._close(slot, why)

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(name for name, slot in self._slots.items() if slot.leaving is None)

    def lateness(self) -> Lateness:
        with self._lock:
            samples = sorted(self._lateness)
            steps, skipped = self._steps, self._skipped

        def at(q: float) -> float:
            return samples[min(len(samples) - 1, int(q * len(samples)))] if samples else 0.0

        return Lateness(steps, skipped, at(0.5), at(0.99), samples[-1] if samples else 0.0)

    # -- running --------------------------------------------------------------------------------------------
    def run(self, stop: threading.Event, duration_s: float | None = None) -> None:
        """Step every job on its turn until `stop` is set (or the duration is over); then wait for the steps in
        flight and close every job."""
        end = None if duration_s is None else self.clock() + duration_s
        pool = ThreadPoolExecutor(max_workers=self.settings.workers, thread_name_prefix="chronos-job")
        try:
            while not stop.is_set() and (end is None or self.clock() < end):
                self._dispatch(pool)
                self._wait(end)
        finally:
            # The turns still queued never start (hundreds of jobs taken up at once queue hundreds of starts): the
            # stop waits for the steps in flight only.
            pool.shutdown(wait=True, cancel_futures=True)
            with self._lock:
                slots = list(self._slots.values())
                self._slots.clear()
            # Side by side: a job's close waits on its threads (an output observer sees a stop within its poll).
            with ThreadPoolExecutor(max_workers=max(1, min(CLOSING_AT_ONCE, len(slots))),
                                    thread_name_prefix="chronos-close") as closing:
                for slot in slots:
                    closing.submit(self._close, slot, slot.leaving or "the controller stopped")

    def _dispatch(self, pool: ThreadPoolExecutor) -> None:
        now = self.clock()
        with self._lock:
            while self._due and self._due[0][0] <= now:
                due, _, name = heapq.heappop(self._due)
                slot = self._slots.get(name)
                if slot is None or slot.leaving is not None:
                    continue  # let go meanwhile
                self._schedule(name, max(due + self.settings.step_every_s, now))
                if slot.busy:
                    slot.skipped += 1
                    self._skipped += 1
                    continue
                self._steps += 1
                slot.busy = True
                pool.submit(self._turn, name, slot, due)

    def _wait(self, end: float | None) -> None:
        with self._lock:
            until = self._due[0][0] if self._due else self.clock() + self.settings.step_every_s
            if end is not None:
                until = min(until, end)
            timeout = max(0.0, min(until - self.clock(), 0.5))  # a stop is seen within half a second
            if timeout > 0:
                self._lock.wait(timeout)

    def _schedule(self, name: str, at: float) -> None:
        self._seq += 1
        heapq.heappush(self._due, (at, self._seq, name))

    def _turn(self, name: str, slot: _Slot, due: float) -> None:
        """One job's turn, on a worker: its start first, then a step; nothing it raises leaves here. Its lateness is
        counted from when it was due to when a worker began it (a full pool delays it as much as the schedule)."""
        late = self.clock() - due
        with self._lock:
            self._lateness.append(late)
        member = slot.member
        if not slot.started:
            try:
                member.start()
                slot.started = True
            except Exception as exc:  # noqa: BLE001 - a job that cannot be started is let go, said why
                self._leave(name, slot, f"could not start: {describe(exc)}")
                return
        try:
            member.step()
            slot.steps += 1
            ended = member.ended()
        except Exception as exc:  # noqa: BLE001 - one job's trouble is said and stays its own
            self.observer.trouble(name, describe(exc))
            ended = None
        self._leave(name, slot, ended)

    def _leave(self, name: str, slot: _Slot, ended: str | None) -> None:
        """After a turn: the slot is free again, and closed if it ended or was removed meanwhile."""
        with self._lock:
            slot.busy = False
            if ended is not None and slot.leaving is None:
                slot.leaving = ended
            why = slot.leaving
            if why is not None and self._slots.get(name) is slot:
                del self._slots[name]
            else:
                why = None  # closed by whoever took it out (the controller's own stop)
        if why is not None:
            self._close(slot, why)

    def _close(self, slot: _Slot, why: str) -> None:
        try:
            slot.member.close()
        except Exception as exc:  # noqa: BLE001 - closing one job never stops the others
            self.observer.trouble(slot.member.name, f"closing it: {describe(exc)}")
        self.observer.left(slot.member.name, why)
