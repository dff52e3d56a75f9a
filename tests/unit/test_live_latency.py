"""The live job's own p99 as latency-model points: a window of steady running at one interval is one observation,
and nothing that is not steady running (a failure, a new interval, a reading without p99) is averaged into one."""

from __future__ import annotations

from chronos.optimizer.model_values import Observation, ProfileObservations
from chronos.tune.fitting import ModelBook
from chronos.tune.live_latency import LiveLatencyWindows
from chronos.tune.readings import LiveReading


def reading(at_s: float, p99_ms: float | None = 4000.0, interval_ms: int = 10_000, rate: float = 2000.0,
            running: bool = True) -> LiveReading:
    return LiveReading(int(at_s * 1000), running, interval_ms, rate, rate, 10.0, p99_ms, p99_ms)


def feed(windows: LiveLatencyWindows, start_s: float, end_s: float, in_failure: bool = False,
         **kw: object) -> list[Observation]:
    out = []
    t = start_s
    while t < end_s:
        if (o := windows.feed(reading(t, **kw), in_failure)) is not None:  # type: ignore[arg-type]
            out.append(o)
        t += 5
    return out


def test_ten_steady_minutes_after_one_left_out_are_one_point_at_their_median_p99_and_mean_rate() -> None:
    windows = LiveLatencyWindows()
    assert feed(windows, 0, 60, p99_ms=90_000.0) == [], "the first minute still holds what came before"
    assert feed(windows, 60, 655) == []
    [point] = feed(windows, 655, 665)
    assert point == Observation(10.0, 2000.0, 4000.0)
    assert feed(windows, 665, 1255) == [] and len(feed(windows, 1255, 1265)) == 1, "the next follows, no settling"


def test_a_failure_a_new_interval_or_a_reading_without_p99_starts_the_window_again() -> None:
    for breaker in ({"in_failure": True}, {"interval_ms": 5_000}, {"p99_ms": None}, {"running": False}):
        windows = LiveLatencyWindows()
        feed(windows, 0, 600)
        feed(windows, 600, 605, **breaker)  # type: ignore[arg-type]
        assert feed(windows, 605, 665) == [], breaker
        assert len(feed(windows, 665, 1270)) == 1, breaker


def test_a_long_interval_waits_for_five_commits_after_two() -> None:
    windows = LiveLatencyWindows()
    assert feed(windows, 0, 800, interval_ms=150_000) == []
    assert len(feed(windows, 800, 1055, interval_ms=150_000)) == 1, "2 x 150 s settle + 5 x 150 s counted"


def test_the_live_points_refit_the_latency_model_beside_the_profile_s() -> None:
    fitted: list[list[Observation]] = []

    def fitter(observations, seed, capacity=None, rising=False):  # type: ignore[no-untyped-def]
        fitted.append(list(observations))
        return None

    profile = ProfileObservations((), tuple(Observation(i, 2000, 1000 * i) for i in (2, 5, 10, 30)))
    book = ModelBook(profile, fitter=fitter)
    book.add_latency(Observation(10, 2000, 12_000))
    assert fitted[-1] == [*profile.latency, Observation(10, 2000, 12_000)] and book.live_latencies == 1
    khaos = ModelBook(profile, fitter=fitter, learn_online=False)
    calls = len(fitted)
    khaos.add_latency(Observation(10, 2000, 12_000))
    assert len(fitted) == calls and khaos.live_latencies == 0, "fitted once, on its profile"
