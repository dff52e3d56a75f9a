from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.rates import ConstantRate, SineRate, StepRate, events_due, load_trace


def test_step_changes_rate_at_the_step() -> None:
    profile = StepRate(before=1000, after=5000, at_s=30)
    assert profile.rate_at(29.99) == 1000
    assert profile.rate_at(30) == 5000


def test_sine_oscillates_around_its_mean_and_never_goes_negative() -> None:
    profile = SineRate(mean=100, amplitude=300, period_s=60)
    assert profile.rate_at(0) == pytest.approx(100)
    assert profile.rate_at(15) == pytest.approx(400)
    assert profile.rate_at(45) == 0.0


def test_events_due_integrates_the_profile() -> None:
    assert events_due(ConstantRate(200), 10) == pytest.approx(2000)
    assert events_due(StepRate(100, 300, 5), 10) == pytest.approx(2000, rel=0.01)
    assert events_due(SineRate(1000, 500, 20), 20) == pytest.approx(20_000, rel=0.01)


def test_trace_replays_csv_with_interpolation(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("time,rate\n0,100\n10,300\n20,300\n")
    profile = load_trace(trace)
    assert profile.rate_at(5) == pytest.approx(200)
    assert profile.rate_at(15) == 300
    assert profile.rate_at(99) == 300
    assert profile.duration_s == 20


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "no rows"), ("0,100\n1,abc\n", "expected 'time,rate'"), ("0,-1\n", "a rate cannot be negative"),
     ("0,1\n0,2\n", "repeats"), ("-30,100\n0,200\n", "a time cannot be negative")],
)
def test_trace_errors_name_the_problem(tmp_path: Path, content: str, message: str) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(content)
    with pytest.raises(InvalidInput, match=message):
        load_trace(trace)


def test_missing_trace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_trace(tmp_path / "nope.csv")


@pytest.mark.parametrize("row", ["10,nan", "inf,5", "10,1e400"])
def test_a_trace_row_that_is_not_a_finite_number_is_refused_naming_its_line(tmp_path: Path, row: str) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(f"time,rate\n0,100\n{row}\n")
    with pytest.raises(InvalidInput, match=r"t\.csv:3: time and rate must be finite"):
        load_trace(trace)
