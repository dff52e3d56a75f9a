"""Recording a workload from offsets: rates per step, replayable as a trace file."""

from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.profiler.workload import record_trace
from chronos.rates import load_trace, save_trace


class Topic:
    """Offsets that grow at 100/s for 10 s, then 300/s; the clock moves only when slept."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def total_end_offset(self) -> int:
        return int(100 * min(self.now, 10) + 300 * max(0.0, self.now - 10))


def test_each_step_is_the_mean_rate_over_it_placed_at_its_start() -> None:
    topic = Topic()
    trace = record_trace(topic, window_s=20, every_s=5, clock=topic.clock, sleep=topic.sleep)
    assert trace.times_s == (0, 5, 10, 15)
    assert trace.rates == pytest.approx((100, 100, 300, 300))


def test_a_recorded_trace_survives_the_csv_round_trip(tmp_path: Path) -> None:
    topic = Topic()
    trace = record_trace(topic, window_s=20, every_s=5, clock=topic.clock, sleep=topic.sleep)
    save_trace(trace, tmp_path / "trace.csv")
    assert load_trace(tmp_path / "trace.csv") == trace


def test_a_window_shorter_than_a_step_is_refused() -> None:
    topic = Topic()
    with pytest.raises(InvalidInput, match="needs at least one step"):
        record_trace(topic, window_s=2, every_s=5, clock=topic.clock, sleep=topic.sleep)
