"""What a profile does to the live job: its band is learnt before the first copy, no copy starts while it is out of
it, and the profile says the live job's p99 and throughput before and while it ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.model import SignalSample
from chronos.profiler.live_watch import LiveImpact, LiveReading, band_of, impact, judge
from chronos.profiler.live_watcher import LiveWatcher
from chronos.profiler.store import ProfileStore


def readings(p99s: list[float | None], lag: float = 100.0, throughput: float = 2000.0,
             start: float = 0.0) -> list[LiveReading]:
    return [LiveReading(start + 5 * i, p99, throughput, lag) for i, p99 in enumerate(p99s)]


BEFORE = readings([900, 1000, 950, 1100, 1000, 980, 1020, 990, 1010, 1200])


def test_the_band_is_the_upper_end_of_the_readings_before_not_their_median() -> None:
    band = band_of(BEFORE)
    assert band is not None and band.p99_ms == 1200 and band.readings == 10
    assert band_of(readings([1000, None, 1000])) is None, "two readings with a p99 say nothing"


def test_a_copy_waits_while_the_live_job_s_p99_or_lag_is_out_of_its_band() -> None:
    band = band_of(BEFORE)
    assert judge(band, readings([1100, 1250, 1200])).admit, "within 5 % of the band's top"
    held = judge(band, readings([1300, 1400, 1350]))
    assert not held.admit and "p99 1,350 ms is above its band (1,260 ms)" in held.why
    lagging = judge(band, readings([1000, 1000, 1000], lag=5000))
    assert not lagging.admit and "input lag 5,000" in lagging.why
    assert judge(band, readings([1000, 1000, 1000], lag=900)).admit, "a lag under LAG_FLOOR is in any band"


def test_without_a_band_or_recent_readings_nothing_is_held_back() -> None:
    assert judge(None, readings([5000] * 5)).admit
    assert judge(band_of(BEFORE), readings([5000, 5000])).admit


def test_the_impact_compares_medians_before_and_while_the_copies_ran() -> None:
    live = impact(BEFORE, readings([1050, 1100, 1060, 1040], throughput=1900), pauses=2, paused_s=40)
    assert live.p99_before_ms == 1000 and live.p99_during_ms == 1055
    assert live.p99_change == pytest.approx(0.055) and live.within_tolerance is False, "5.5 % is over the 5 % allowed"
    assert impact(BEFORE, readings([1050, 1040, 1020])).within_tolerance
    assert (live.throughput_before, live.throughput_during, live.pauses, live.paused_s) == (2000, 1900, 2, 40)
    unknown = impact(BEFORE, readings([None, None, None, None]))
    assert unknown.p99_during_ms is None and unknown.p99_change is None and unknown.within_tolerance is None


class FakeSignals:
    """The live job's signals as the watcher reads them: a p99 of 1 s, then 2 s, the output's latencies."""

    def __init__(self) -> None:
        self.latency = 1000.0
        self.closed = False
        self.fail = False

    def sample(self) -> SignalSample:
        if self.fail:
            raise OSError("broker gone")
        return SignalSample(0, True, 2000.0, 50.0)

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]:
        return [self.latency] * 50

    def close(self) -> None:
        self.closed = True


def test_the_watcher_splits_its_readings_at_the_profile_s_start_and_judges_the_recent_ones() -> None:
    signals, now = FakeSignals(), [0.0]
    watcher = LiveWatcher(signals, wall_ms=lambda: int(now[0] * 1000), clock=lambda: now[0])
    for _ in range(3):
        assert not watcher.band_ready()
        now[0] += 5
        watcher.read_once()
    assert watcher.band_ready()
    now[0] += 1
    watcher.begin_profile()
    signals.latency = 2000.0
    for _ in range(4):
        now[0] += 5
        watcher.read_once()
    signals.fail = True
    watcher.read_once()
    assert watcher.failed_readings == 1, "a failed reading is counted, never raised into the profile"
    verdict = watcher.verdict()
    assert not verdict.admit and "above its band" in verdict.why
    live = watcher.impact(0, 0.0)
    assert (live.p99_before_ms, live.p99_during_ms, live.readings_before, live.readings_during) == (1000, 2000, 3, 4)
    watcher.close()
    assert signals.closed


def test_the_store_keeps_what_each_invocation_did_to_the_live_job(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "j", 0, "{}")
    live = LiveImpact(1000.0, 1040.0, 2000.0, 1990.0, 12, 90, 1, 25.0)
    store.save_live_impact("p1", 111, live, 10)
    store.close()
    again = ProfileStore(tmp_path / "p.db")
    assert again.live_impacts("p1") == [(111, live, 10)]
    assert again.live_impacts("other") == []
    again.close()
