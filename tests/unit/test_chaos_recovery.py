"""Steady-state bands learned from data, and the recovery phases read off a synthetic series."""

import random

import pytest

from chronos.chaos.recovery import analyse_recovery
from chronos.chaos.steady_state import learn_steady_state
from chronos.model import SignalSample


def steady(at_ms: int, rng: random.Random) -> SignalSample:
    return SignalSample(at_ms, True, throughput=5000 + rng.gauss(0, 100), lag=300 + rng.gauss(0, 50),
                        p99_ms=4000 + rng.gauss(0, 200))


def pre_fault(rng: random.Random) -> list[SignalSample]:
    return [steady(t, rng) for t in range(0, 60_000, 1000)]


def test_band_is_learned_from_the_data() -> None:
    rng = random.Random(1)
    band = learn_steady_state(pre_fault(rng))
    assert band.throughput is not None and band.throughput.low is not None and band.throughput.high is not None
    assert 4000 < band.throughput.low < 5000 < band.throughput.high < 6000
    assert band.lag is not None and band.lag.low is None, "low lag is never a problem"
    noisy = learn_steady_state([SignalSample(t, True, throughput=5000 + (t % 7) * 300) for t in range(60)])
    assert noisy.throughput is not None and noisy.throughput.high is not None
    assert noisy.throughput.high > band.throughput.high, "a noisier window learns a wider band"


def test_a_flat_window_still_tolerates_a_little_wobble() -> None:
    band = learn_steady_state([SignalSample(t, True, throughput=1000.0) for t in range(10)])
    assert band.throughput is not None and band.throughput.contains(1050)


def test_too_few_samples_to_learn_from() -> None:
    with pytest.raises(ValueError, match="pre-fault samples"):
        learn_steady_state([SignalSample(0, True, throughput=1.0)])


def _fault_series(rng: random.Random, back_at_ms: int) -> list[SignalSample]:
    """Fault at 60 s; down until 63 s; RUNNING from 70 s; catch-up with high lag until `back_at_ms`."""
    series = []
    for t in range(60_000, 200_000, 1000):
        if t < 63_000:
            series.append(SignalSample(t, True, throughput=5000, lag=400, p99_ms=4000))
        elif t < 70_000:
            series.append(SignalSample(t, False))
        elif t < back_at_ms:
            series.append(SignalSample(t, True, throughput=20_000, lag=80_000 - (t - 70_000), p99_ms=30_000))
        else:
            series.append(steady(t, rng))
    return series


def test_phases_come_in_order_and_recovery_needs_the_hold() -> None:
    rng = random.Random(2)
    band = learn_steady_state(pre_fault(rng))
    phases = analyse_recovery(60_000, _fault_series(rng, back_at_ms=95_000), band, hold_ms=15_000)
    assert phases.detected_ms == 63_000 and phases.running_ms == 70_000
    assert phases.recovered_ms == 95_000
    assert phases.recovery_s == 35.0
    assert phases.peak_lag == 80_000
    assert phases.fault_ms < phases.detected_ms < phases.running_ms <= phases.recovered_ms


def test_a_relapse_restarts_the_hold() -> None:
    rng = random.Random(3)
    band = learn_steady_state(pre_fault(rng))
    series = _fault_series(rng, back_at_ms=95_000)
    series = [SignalSample(s.at_ms, True, 5000, 90_000, 4000) if s.at_ms == 105_000 else s for s in series]
    assert analyse_recovery(60_000, series, band, hold_ms=15_000).recovered_ms == 106_000


def test_never_back_in_steady_state_is_not_a_number() -> None:
    rng = random.Random(4)
    band = learn_steady_state(pre_fault(rng))
    phases = analyse_recovery(60_000, _fault_series(rng, back_at_ms=10**9), band, timeout_ms=120_000)
    assert phases.running_ms == 70_000
    assert not phases.recovered and phases.recovery_s is None


def test_latency_only_judges_the_instants_that_have_output() -> None:
    band = learn_steady_state(pre_fault(random.Random(5)))
    assert band.holds_at(SignalSample(0, True, throughput=5000, lag=300, p99_ms=None))
    assert not band.holds_at(SignalSample(0, True, throughput=5000, lag=300, p99_ms=60_000))
    assert not band.holds_at(SignalSample(0, True, throughput=None, lag=300, p99_ms=4000))
    assert not band.holds_at(SignalSample(0, False, throughput=5000, lag=300, p99_ms=4000))


def test_two_commits_of_latency_are_enough_to_judge_it() -> None:
    rng = random.Random(6)
    window = [SignalSample(t, True, throughput=5000 + rng.gauss(0, 50), lag=300 + rng.gauss(0, 20),
                           p99_ms=9600.0 if t in (5_000, 15_000) else None) for t in range(0, 20_000, 500)]
    band = learn_steady_state(window)
    assert band.p99_ms is not None
    assert not band.holds_at(SignalSample(0, True, throughput=5000, lag=300, p99_ms=40_000))


def test_a_quiet_lag_baseline_still_tolerates_half_a_second_of_input() -> None:
    window = [SignalSample(t, True, throughput=5000.0, lag=1000.0) for t in range(0, 20_000, 500)]
    band = learn_steady_state(window)
    assert band.lag is not None and band.lag.contains(3400) and not band.lag.contains(3600)


def test_under_a_falling_load_a_job_that_reads_what_arrives_has_recovered() -> None:
    """Live, the load swings: 6,000 ev/s before the kill, 3,500 after it. Judged against the throughput
    before the fault the job would never recover; judged against the input rate it is back once the
    catch-up burst ends (the side-by-side bench found the tuner missing recoveries this way)."""
    rng = random.Random(3)
    before = [SignalSample(t, True, throughput=6000 * (1 + rng.gauss(0, 0.03)), lag=200.0, input_rate=6000.0)
              for t in range(0, 60_000, 2000)]
    band = learn_steady_state(before)
    assert band.keeping_up is not None
    fault = 60_000
    after = ([SignalSample(fault + t, False, throughput=0.0, lag=50_000.0, input_rate=4000.0) for t in range(2000, 26_000, 2000)]
             + [SignalSample(fault + 26_000 + t, True, throughput=20_000.0, lag=40_000.0 - 4 * t, input_rate=3800.0)
                for t in range(0, 8000, 2000)]
             + [SignalSample(fault + 34_000 + t, True, throughput=3500 * (1 + rng.gauss(0, 0.03)), lag=200.0,
                             input_rate=3500.0) for t in range(0, 40_000, 2000)])
    phases = analyse_recovery(fault, after, band)
    assert phases.recovered_ms == fault + 34_000
    without_rate = learn_steady_state([SignalSample(s.at_ms, True, s.throughput, s.lag) for s in before])
    assert not analyse_recovery(fault, [SignalSample(s.at_ms, s.running, s.throughput, s.lag) for s in after],
                                without_rate).recovered, "the absolute band cannot tell a lower load from a slow job"


def test_latency_a_restart_moves_by_less_than_an_interval_is_back_in_band() -> None:
    """An exactly-once job's output waits for the next checkpoint commit; a restart resets the checkpoints'
    phase against the windows, so the job can run on caught up with its latency up to one interval higher (measured
    on a profiling copy: p99 8.2 s before a kill, 11.6 s for a minute after it, throughput and lag back at once)."""
    before = [SignalSample(t, True, throughput=400.0 + t % 3, lag=30.0, p99_ms=8_210.0 + t % 40)
              for t in range(0, 20_000, 500)]
    caught_up = SignalSample(30_000, True, throughput=401.0, lag=30.0, p99_ms=11_650.0)
    assert learn_steady_state(before, interval_ms=5_000).holds_at(caught_up)
    assert not learn_steady_state(before).holds_at(caught_up), "without the interval: a recovery never seen"
    slower = SignalSample(30_000, True, throughput=401.0, lag=30.0, p99_ms=8_210.0 + 7_000)
    assert not learn_steady_state(before, interval_ms=5_000).holds_at(slower), "more than an interval is not a phase"


def test_once_the_lag_is_back_a_throughput_above_its_band_is_a_batch_not_a_catch_up() -> None:
    """Read off a chaos experiment at 500 events/s (0.5 s samples): the warm-up learnt throughput 420-552; after the
    kill the job ran again with a lag of tens of records, and every few samples a batch of fetches read 550-595.
    Judged two-sided it was never recovered in 150 s; its lag says it had caught up at once."""
    rng = random.Random(7)
    batch = (475.0, 471.0, 468.0, 578.0, 473.0, 466.0, 480.0, 562.0)
    before = [SignalSample(t, True, throughput=batch[n % 8] + rng.gauss(0, 3), lag=40.0 + rng.gauss(0, 12))
              for n, t in enumerate(range(0, 12_000, 500))]
    band = learn_steady_state(before)
    assert band.throughput is not None and band.throughput.high is not None and band.throughput.high < 595
    fault = 20_000
    after = ([SignalSample(fault + t, False) for t in range(500, 5000, 500)]
             + [SignalSample(fault + 5000 + t, True, throughput=(595.0, 470.0, 465.0, 481.0)[n % 4], lag=30.0)
                for n, t in enumerate(range(0, 30_000, 500))])
    assert analyse_recovery(fault, after, band, hold_ms=5000).recovered_ms == fault + 5000
    behind = [SignalSample(s.at_ms, s.running, s.throughput, 5_000.0 if s.running else None) for s in after]
    assert not analyse_recovery(fault, behind, band, hold_ms=5000).recovered, "a lag out of its band is a catch-up"
    no_lag = learn_steady_state([SignalSample(s.at_ms, True, s.throughput) for s in before])
    slow = [SignalSample(s.at_ms, s.running, s.throughput) for s in after]
    assert not analyse_recovery(fault, slow, no_lag, hold_ms=5000).recovered, "without a lag, throughput is two-sided"
