"""The fallback's ceiling is the highest load held for a minute: a ten-second burst after a kill (a starved load
generator catching up its schedule) is not a load the job's own interval must be chosen for."""

from __future__ import annotations

from chronos.tune.sustained_load import sustained_rate


def readings(rates: list[float | None], every_s: float = 2.0) -> list[tuple[float, float | None]]:
    """(at, rate), newest first, the newest at the end of the list's time."""
    return [(i * every_s, r) for i, r in enumerate(rates)][::-1]


def test_a_burst_after_a_kill_barely_moves_the_minute_mean() -> None:
    steady = [16_000.0] * 20
    after_kill = [250.0] * 3 + [27_000.0] * 5 + [16_000.0] * 3
    series = readings(steady + after_kill)
    mean = sustained_rate(series, now_s=series[0][0])
    assert mean is not None and 14_000 <= mean <= 18_000, mean


def test_a_load_held_for_a_minute_is_the_ceiling() -> None:
    series = readings([5_000.0] * 10 + [20_000.0] * 31)
    assert sustained_rate(series, now_s=series[0][0]) == 20_000.0


def test_a_first_minute_is_no_evidence_of_a_sustained_load() -> None:
    series = readings([20_000.0] * 20)  # 38 s of readings
    assert sustained_rate(series, now_s=series[0][0]) is None


def test_readings_without_a_rate_are_left_out_and_none_at_all_is_no_rate() -> None:
    assert sustained_rate(readings([None, 8_000.0] * 20), now_s=78.0) == 8_000.0
    assert sustained_rate(readings([None] * 40), now_s=78.0) is None
