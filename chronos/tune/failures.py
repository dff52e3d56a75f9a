"""Every real failure of the live job is a recovery measurement: the online half of the model.

A failure is noticed either in the job's exception history (its timestamp is when Flink saw it) or
as tasks that stop running; from there the recovery is analysed exactly as a chaos experiment's is
(same steady-state bands learned from the readings before it, same hold), so live and profiled
recoveries mean the same thing and can be fitted together.

Two live-only complications. Flink notices a lost TaskManager only at its heartbeat timeout, so the
readings just before the exception already show the job stalled (tasks "RUNNING", nothing read): those
are the failure, not its steady state, and are left out of the learning. And right after a start or a
retune there are too few readings to learn from: the job has then recovered when it is back to reading
what arrives (the benchmark found a failure 7 s after a retune that was never closed: its "steady state"
was the stall).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from chronos.chaos.catch_up import NO_CATCH_UP, CatchUp, explain_catch_up
from chronos.chaos.recovery import analyse_recovery
from chronos.chaos.steady_state import KEEPING_UP, SteadyBands, learn_steady_state
from chronos.model import SignalSample
from chronos.tune.readings import LiveReading


@dataclass(frozen=True)
class ObservedFailure:
    failed_ms: int
    interval_ms: int
    rate: float
    recovery_s: float | None  # None: not back in steady state within the watch
    recovered_ms: int | None
    # Its phases after Flink saw it (the moment the fault struck is not known of a live failure) and what explains
    # the catch-up (chronos.chaos.catch_up), as a chaos experiment measures them.
    running_ms: int | None = None
    catch_up: CatchUp = NO_CATCH_UP


class FailureWatch:
    def __init__(self, hold_s: float = 15.0, timeout_s: float = 600.0, history: int = 120) -> None:
        self._hold_ms = int(hold_s * 1000)
        self._timeout_ms = int(timeout_s * 1000)
        self._before: deque[LiveReading] = deque(maxlen=history)
        self._after: list[LiveReading] = []
        self._failure: tuple[int, SteadyBands | None, int, float] | None = None  # (at, steady, interval, rate)
        self._known_failure_ms: int | None = None
        self._baseline_set = False

    @property
    def hold_ms(self) -> int:
        return self._hold_ms

    @property
    def in_failure(self) -> bool:
        return self._failure is not None

    @property
    def failure_started_ms(self) -> int | None:
        return self._failure[0] if self._failure else None

    def reset(self) -> None:
        """After a retune: a new job, a new exception history, a steady state to learn again."""
        self._before.clear()
        self._after.clear()
        self._failure = None
        self._known_failure_ms = None
        self._baseline_set = False

    def feed(self, reading: LiveReading) -> ObservedFailure | None:
        if not self._baseline_set:
            # Exceptions from before the watch began are history, not failures seen.
            self._known_failure_ms, self._baseline_set = reading.last_failure_ms, True
        new_exception = (reading.last_failure_ms is not None
                         and (self._known_failure_ms is None or reading.last_failure_ms > self._known_failure_ms))
        if new_exception:
            self._known_failure_ms = reading.last_failure_ms
        if self._failure is None:
            if new_exception or not reading.running:
                at = reading.last_failure_ms if new_exception and reading.last_failure_ms else reading.at_ms
                self._start(at, reading)
            else:
                self._before.append(reading)
                return None
        return self._follow(reading)

    def _start(self, at_ms: int, reading: LiveReading) -> None:
        steady: SteadyBands | None
        interval = next((r.interval_ms for r in reversed(self._before) if r.interval_ms), reading.interval_ms or 0)
        try:
            steady = learn_steady_state([r.sample() for r in self._before if not _stalled(r)], interval_ms=interval)
        except ValueError:
            # Too little history: judged by keeping up with the input if that is known, else counted unjudged.
            steady = KEEPING_UP if reading.input_rate is not None or any(
                r.input_rate is not None for r in self._before) else None
        self._failure = (at_ms, steady, interval, _load_before(self._before, at_ms))
        self._after = []

    def _follow(self, reading: LiveReading) -> ObservedFailure | None:
        assert self._failure is not None
        at, steady, interval, rate = self._failure
        self._after.append(reading)
        timed_out = reading.at_ms - at >= self._timeout_ms
        if steady is None:
            if timed_out or (reading.running and reading.at_ms - at > self._hold_ms and len(self._after) > 3):
                return self._close(ObservedFailure(at, interval, rate, None, None))
            return None
        # The failure itself is the first "not running" moment, even if a restart was too quick to be sampled.
        samples = [SignalSample(at, False), *(r.sample() for r in self._after if r.at_ms > at)]
        phases = analyse_recovery(at, samples, steady, self._hold_ms, self._timeout_ms)
        if phases.recovered:
            return self._close(ObservedFailure(at, interval, rate, phases.recovery_s, phases.recovered_ms,
                                               phases.running_ms,
                                               explain_catch_up(samples, phases.running_ms, phases.recovered_ms)))
        if timed_out:
            return self._close(ObservedFailure(at, interval, rate, None, None, phases.running_ms))
        return None

    def _close(self, failure: ObservedFailure) -> ObservedFailure:
        self._failure = None
        self._before.clear()
        self._before.extend(r for r in self._after[-10:] if r.running)
        self._after = []
        return failure


LOAD_WINDOW_MS = 60_000


def _load_before(readings: Sequence[LiveReading], at_ms: int) -> float:
    """The load a recovery is modelled at: the mean arrival rate of the minute before the failure, as a profile's
    copy is fed a nominal rate. Not a peak of the last readings: end offsets read 2 s apart on a busy two-core machine
    swung 9-41k ev/s around a ~16k ev/s generator (its bursts), and the max of the last six put the live recoveries
    of the busy side by side at 20-41k ev/s, past the job's capacity, where the phase law predicts 1,100 s."""
    rates = [r.input_rate for r in readings if r.input_rate is not None and at_ms - r.at_ms <= LOAD_WINDOW_MS]
    if not rates:
        rates = [r.input_rate for r in readings if r.input_rate is not None][-1:]
    return sum(rates) / len(rates) if rates else 0.0


def _stalled(reading: LiveReading) -> bool:
    """Input arrives and (almost) nothing is read: a failure Flink has not noticed yet, or a job not yet started."""
    if not reading.input_rate:
        return False
    return reading.throughput is None or reading.throughput < 0.1 * reading.input_rate
