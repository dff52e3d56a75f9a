"""The generator's pacing and bookkeeping, driven by a fake clock and an in-memory sink."""

import json

import pytest

from chronos.jobs.fleet import FLUSH_VEHICLE, VehicleFleet
from chronos.jobs.loadgen import run_load
from chronos.rates import ConstantRate, StepRate


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class MemorySink:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, bytes, int | None]] = []

    def send(self, key: bytes | None, value: bytes, partition: int | None = None) -> None:
        self.sent.append((key, value, partition))

    def partitions(self) -> tuple[int, ...]:
        return (0, 1)

    def flush(self) -> None:
        pass


def _run(profile, **kwargs):
    clock, sink = FakeClock(), MemorySink()
    report = run_load(sink, VehicleFleet(50, seed=7), profile, clock=clock, sleep=clock.sleep,
                      wall_ms=lambda: int(clock.now * 1000), **kwargs)
    return report, sink


def test_holds_the_target_rate() -> None:
    report, _sink = _run(ConstantRate(500), duration_s=10)
    assert report.sent == pytest.approx(5000, rel=0.01)
    assert report.achieved_rate == pytest.approx(500, rel=0.01)


def test_follows_a_step() -> None:
    report, _ = _run(StepRate(100, 1000, 5), duration_s=10)
    assert report.sent == pytest.approx(100 * 5 + 1000 * 5, rel=0.02)


def test_stops_at_an_event_count_and_counts_per_vehicle() -> None:
    report, sink = _run(ConstantRate(10_000), max_events=1234)
    assert report.sent == 1234 == len(sink.sent)
    assert sum(count for _, count in report.per_vehicle) == 1234
    first_key = sink.sent[0][0]
    assert first_key is not None and report.count_of(first_key.decode()) >= 1


def test_closing_windows_sends_a_flush_to_every_partition() -> None:
    _, sink = _run(ConstantRate(1000), max_events=10, close_windows=True)
    flushes = [(v, p) for k, v, p in sink.sent if json.loads(v)["vehicle_id"] == FLUSH_VEHICLE]
    assert sorted(p for _, p in flushes) == [0, 1]


def test_same_seed_same_events() -> None:
    a = [VehicleFleet(20, seed=3).next_event(1000) for _ in range(1)]
    b = [VehicleFleet(20, seed=3).next_event(1000) for _ in range(1)]
    assert a == b


def test_needs_a_bound() -> None:
    with pytest.raises(ValueError):
        _run(ConstantRate(1))


def test_events_are_valid_json_with_the_jobs_fields() -> None:
    fleet = VehicleFleet(10, regions=3, seed=1, run_id="r-1")
    key, value = fleet.next_event(1_700_000_000_123)
    event = json.loads(value)
    assert event["vehicle_id"] == key and event["region"].startswith("r-")
    assert event["event_time"] == event["created_ms"] == 1_700_000_000_123
    assert set(event) == {"event_id", "vehicle_id", "region", "speed", "lat", "lon", "event_time", "created_ms"}


def test_parallel_workers_split_vehicles_and_events_without_overlap() -> None:
    from chronos.jobs.parallel_load import LoadPlan

    plan = LoadPlan("b:1", "t", ConstantRate(1), vehicles=10, count=1001, workers=3)
    shares = [plan.share(i) for i in range(3)]
    assert [s[2] for s in shares] == [334, 334, 333]
    ranges = [set(range(first, first + n)) for first, n, _ in shares]
    assert set().union(*ranges) == set(range(10)) and sum(len(r) for r in ranges) == 10
