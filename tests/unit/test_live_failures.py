"""Failures of the live job, measured from the tuner's readings (every 2 s here, like the benchmark's).

A killed TaskManager is noticed by Flink only at its heartbeat timeout: until then the readings say
RUNNING and nothing is read. Those seconds belong to the failure, not to the steady state it is
judged against, and a failure soon after a retune must still be closed with a recovery time.
"""

from __future__ import annotations

import pytest

from chronos.tune.failures import FailureWatch, ObservedFailure
from chronos.tune.readings import LiveReading

RATE = 2400.0


def reading(at_s: float, *, reads: float | None, running: bool = True, lag: float = 50.0,
            failure_at_s: float | None = None) -> LiveReading:
    return LiveReading(int(at_s * 1000), running, 2000, RATE, reads, lag, None, None,
                       last_failure_ms=None if failure_at_s is None else int(failure_at_s * 1000))


def killed_at_7_noticed_at_20(start_s: float) -> list[LiveReading]:
    """Keeping up until 7 s, stalled until Flink's exception at 20 s, restarting, catching up, then keeping up."""
    readings = [reading(t, reads=RATE) for t in range(int(start_s), 8, 2)]
    readings += [reading(t, reads=0.0, lag=RATE * (t - 7)) for t in range(8, 20, 2)]
    readings += [reading(t, reads=None, running=False, lag=RATE * 13, failure_at_s=20) for t in (20, 22, 24)]
    readings += [reading(26, reads=6 * RATE, lag=RATE * 6, failure_at_s=20)]
    readings += [reading(t, reads=RATE, failure_at_s=20) for t in range(28, 80, 2)]
    return readings


def watch(readings: list[LiveReading], watcher: FailureWatch) -> list[ObservedFailure]:
    return [f for r in readings if (f := watcher.feed(r)) is not None]


def test_a_failure_seven_seconds_after_a_retune_is_closed_when_the_job_keeps_up_again() -> None:
    watcher = FailureWatch(hold_s=15)
    watcher.reset()  # the retune: four readings of the new job before the kill
    [failure] = watch(killed_at_7_noticed_at_20(start_s=0), watcher)
    assert failure.failed_ms == 20_000, "from Flink's exception: the kill itself is not visible to the tuner"
    assert failure.recovery_s == 8.0, "keeping up again from 28 s"
    assert not watcher.in_failure


def test_the_stall_before_flink_notices_is_not_learned_as_the_steady_state() -> None:
    """A long history, then the same kill: the band comes from the readings that kept up."""
    watcher = FailureWatch(hold_s=15)
    history = [reading(t, reads=RATE) for t in range(-200, 0, 2)]
    [failure] = watch(history + killed_at_7_noticed_at_20(start_s=0), watcher)
    assert failure.recovery_s == 8.0


def test_without_any_input_rate_a_failure_without_history_is_counted_but_not_judged() -> None:
    watcher = FailureWatch(hold_s=15)
    blind = [LiveReading(t * 1000, t not in (10, 12), 2000, None, None, None, None, None) for t in range(0, 60, 2)]
    [failure] = watch(blind, watcher)
    assert failure.failed_ms == 10_000 and failure.recovery_s is None


def test_a_recovery_is_modelled_at_the_minute_before_its_mean_load_not_a_burst() -> None:
    """End offsets read 2 s apart swing around what the generator sends (its bursts on a busy machine); a profile's
    copies are fed a nominal rate, so a live point must be on the same scale to be fitted with them."""
    watcher = FailureWatch(hold_s=15, timeout_s=30)  # closed unrecovered at 50 s: only its load is asked here

    def arriving(t: int) -> float:
        return RATE * (2.5 if t % 8 == 0 else 0.5)  # mean RATE, bursts of 2.5x every 8 s

    readings = [LiveReading(t * 1000, True, 2000, arriving(t), arriving(t), 50.0, None, None) for t in range(-120, 8, 2)]
    readings += [LiveReading(t * 1000, True, 2000, arriving(t), 0.0, RATE * (t - 7), None, None) for t in range(8, 20, 2)]
    readings += [LiveReading(t * 1000, False, 2000, arriving(t), None, RATE * 13, None, None, last_failure_ms=20_000)
                 for t in range(20, 60, 2)]
    [failure] = watch(readings, watcher)
    assert failure.rate == pytest.approx(RATE, rel=0.05), "the minute before, not its bursts"
