"""QoS-violation seconds: what every strategy in the side-by-side is judged by."""

from __future__ import annotations

from chronos.optimizer.policy import TunePolicy
from chronos.tune.failures import ObservedFailure
from chronos.tune.qos_account import QosAccount
from chronos.tune.readings import LiveReading

POLICY = TunePolicy(latency_p99_ms=25_000, recovery_s=30)


def reading(at_s: float, *, p99_s: float | None = None, stale_s: float | None = None, rate: float = 2000.0,
            running: bool = True) -> LiveReading:
    return LiveReading(int(at_s * 1000), running, 60_000, rate, rate, 0.0, None,
                       None if p99_s is None else p99_s * 1000, output_staleness_ms=None if stale_s is None else stale_s * 1000)


def test_an_exactly_once_sink_at_a_long_interval_is_late_for_most_of_each_interval() -> None:
    """Commits every 60 s, each covering input up to 5 s before it: the output is more than 25 s behind
    from 20 s after each commit to the next, 40 s of every 60, though only the commit readings see output."""
    account = QosAccount()
    for t in range(0, 122, 2):
        since_commit = t % 60
        account.add(reading(t, p99_s=65.0 if since_commit == 0 and t else None, stale_s=since_commit + 5), POLICY, None)
    assert 78 <= account.latency_s <= 82


def test_output_on_time_is_no_violation_and_neither_is_an_idle_input() -> None:
    account = QosAccount()
    for t in range(0, 60, 2):
        account.add(reading(t, p99_s=8.0, stale_s=8.0), POLICY, None)
    for t in range(60, 120, 2):
        account.add(reading(t, stale_s=t - 52.0, rate=0.0), POLICY, None)
    assert account.latency_s == 0


def test_a_recovery_counts_exactly_its_seconds_beyond_the_target_never_the_confirming_hold() -> None:
    """Failed at 100 s, back at 150 s (50 s: 20 s over a 30 s target), confirmed after the 15 s hold."""
    account = QosAccount(hold_ms=15_000)
    seen = []
    for t in range(90, 166, 2):
        closed = ObservedFailure(100_000, 60_000, 2000.0, 50.0, 150_000) if t == 164 else None
        account.add(reading(t), POLICY, 100_000 if 100 <= t < 164 else None, closed)
        seen.append(account.recovery_s)
    assert max(seen) <= 20 and account.recovery_s == 20
    assert seen == sorted(seen), "the running total only grows: an exported counter"


def test_a_failure_still_open_at_the_end_counts_up_to_the_end() -> None:
    account = QosAccount(hold_ms=15_000)
    for t in range(100, 181, 2):
        account.add(reading(t, running=False), POLICY, 100_000)
    assert account.recovery_s == 180 - 15 - 130
    account.finish(100_000, 180_000, POLICY)
    assert account.recovery_s == 50
