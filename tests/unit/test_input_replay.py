"""The job's own input, recorded and replayed (fakes of chronos's own reader; no Kafka): the recording reads
only what arrives in its window, keeps a uniform share of it in order when it is too large, and says in one
line when nothing came; the replay sends each record to the copy's topic for its live one, looping, with its
times moved to the moment it is sent; an event-time path that finds nothing is refused with an example."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.profiler.event_time import EventTimeFields, shifted
from chronos.profiler.input_sample import InputRecord, InputSample, Partition, Reservoir, SampleLimits, record_sample
from chronos.profiler.replay import ReplayFeed, check_event_time, replay_fidelity, worker_share
from chronos.profiler.store import ProfileStore
from chronos.rates import TraceRate

BASE = 1_764_756_000_000  # 2026-12-03T10:00:00Z


def rec(i: int, key: str = "k", topic: str = "in", ts: int = BASE, value: bytes | None = None) -> InputRecord:
    return InputRecord(topic, i % 2, i // 2, key.encode(), value if value is not None else b'{"n": %d}' % i,
                       (("h", b"v"),), ts + i)


class Arrivals:
    """A topic's records arriving `per_s` a second on a fake clock, read by a group-less reader from the end."""

    def __init__(self, per_s: int, already: int = 100) -> None:
        self.t, self.per_s, self.already = 0.0, per_s, already
        self.read = {("in", 0): already, ("in", 1): already}

    def clock(self) -> float:
        return self.t

    def _written(self, partition: int) -> int:
        return self.already + int(self.t * self.per_s / 2) + (1 if partition == 0 and self.t * self.per_s % 2 >= 1 else 0)

    def end_offsets(self) -> Mapping[Partition, int]:
        return {("in", p): self._written(p) for p in (0, 1)}

    def positions(self) -> Mapping[Partition, int]:
        return dict(self.read)

    def poll(self, timeout_s: float) -> list[InputRecord]:
        self.t += max(timeout_s, 0.01)
        out = []
        for (topic, p), pos in self.read.items():
            end = self._written(p)
            out += [InputRecord(topic, p, o, f"k{o % 7}".encode(), b"{}", (), int(self.t * 1000)) for o in range(pos, end)]
            self.read[(topic, p)] = end
        return out


def test_a_recording_reads_what_arrives_in_its_window_and_its_rate_from_the_end_offsets() -> None:
    world = Arrivals(per_s=100)
    sample = record_sample(world, ("in",), 10, every_s=5, clock=world.clock)
    assert sample.seen == len(sample.records) == pytest.approx(1000, abs=30)
    assert all(r.offset >= 100 for r in sample.records), "nothing from before the window"
    assert sample.trace.times_s == (0.0, 5.0) and all(r == pytest.approx(100, rel=0.05) for r in sample.trace.rates)


def test_a_recording_over_its_bound_keeps_a_uniform_share_in_order_of_arrival() -> None:
    world = Arrivals(per_s=2000)
    sample = record_sample(world, ("in",), 10, every_s=5, limits=SampleLimits(max_records=1000), clock=world.clock)
    assert sample.seen == pytest.approx(20_000, abs=400) and len(sample.records) == 1000
    assert [r.timestamp_ms for r in sample.records] == sorted(r.timestamp_ms for r in sample.records)
    late = sum(1 for r in sample.records if r.timestamp_ms > 5000)
    assert 400 < late < 600, "the second half of the window is as present as the first"
    shares = sample.key_shares()
    assert all(abs(s - 1 / 7) < 0.03 for s in shares.values()), shares


def test_the_byte_bound_holds_too() -> None:
    reservoir = Reservoir(SampleLimits(max_records=10_000, max_bytes=50_000), seed=1)
    for i in range(5000):
        reservoir.add(rec(i, value=b"x" * 100))
    kept = reservoir.records()
    assert sum(r.size for r in kept) <= 50_000 and len(kept) > 100 and reservoir.seen == 5000


def test_a_window_with_no_records_is_one_line() -> None:
    world = Arrivals(per_s=0)
    with pytest.raises(InvalidInput, match="the input topic in carried no records during the 10 s recording"):
        record_sample(world, ("in",), 10, every_s=5, clock=world.clock)


def test_the_replay_loops_over_the_sample_into_the_copy_topics_with_times_moved_to_now() -> None:
    records = [rec(0, "a", "orders", value=b'{"placed_at": "2026-12-03T10:00:00.000Z"}'),
               rec(1, "b", "payments", value=b'{"payment": {"at_ms": %d}}' % (BASE + 500))]
    feed = ReplayFeed(records, {"orders": "orders-copy", "payments": "payments-copy"},
                      EventTimeFields(("$.placed_at", "$.payment.at_ms")))
    later = BASE + 3_600_000
    sent = [feed.next(now_ms=later + i) for i in range(5)]
    assert [r.topic for r in sent] == ["orders-copy", "payments-copy"] * 2 + ["orders-copy"] and feed.loops == 2
    assert sent[0].timestamp_ms == later and sent[0].key == b"a" and sent[0].headers == (("h", b"v"),)
    # moved by now - its Kafka timestamp (an hour): each field keeps its gap to that timestamp
    assert sent[0].value == b'{"placed_at":"2026-12-03T11:00:00.000Z"}'
    assert sent[1].value == b'{"payment":{"at_ms":%d}}' % (later + 500)


@pytest.mark.parametrize(("value", "moved"), [
    (1_764_802_800_123, 1_764_802_801_623),  # epoch ms
    (1_764_802_800, 1_764_802_802),  # epoch s (1.5 s, rounded)
    (1_764_802_800.25, 1_764_802_801.75),
    (1_764_802_800_123_456, 1_764_802_801_623_456),  # epoch us
    ("1764802800123", "1764802801623"),
    ("2026-12-03 23:00:00", "2026-12-03 23:00:01"),
    ("2026-12-03T23:59:59.500+01:00", "2026-12-04T00:00:01.000+01:00"),
    ("2026-12-03T23:00:00.123456789Z", "2026-12-03T23:00:01.623456000Z"),
    ("not a time", None), (True, None), ({"a": 1}, None),
])
def test_a_time_keeps_its_format_when_moved(value: object, moved: object) -> None:
    assert shifted(value, 1500) == moved


def test_a_worker_owns_whole_keys() -> None:
    records = [rec(i, key=f"k{i % 13}") for i in range(200)]
    shares = [worker_share(records, w, 3) for w in range(3)]
    assert sum(len(s) for s in shares) == 200
    keys = [{r.key for r in s} for s in shares]
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2]) and not (keys[0] & keys[2])


def sample_of(*values: bytes) -> InputSample:
    return InputSample(tuple(rec(i, value=v) for i, v in enumerate(values)), len(values), 10.0, TraceRate((0.0,), (1.0,)))


def test_an_event_time_path_that_finds_nothing_is_refused_with_an_example_record() -> None:
    sample = sample_of(b'{"ts": 1764802800123, "user": {"id": 7}}', b'{"ts": 1764802800124}')
    check_event_time(EventTimeFields(("$.ts",)), sample)
    with pytest.raises(InvalidInput, match=r'event-time field \$.user.at matches no time in the 2 recorded records; '
                                           r'an example record: \{"ts":1764802800123,"user":\{"id":7\}\}'):
        check_event_time(EventTimeFields(("$.ts", "$.user.at")), sample)
    with pytest.raises(InvalidInput, match="is not a JSON path"):
        EventTimeFields(("$..[",))


def test_a_sample_is_stored_with_its_profile_and_read_back_whole(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "p.db")
    sample = InputSample((rec(0, value=None), rec(1, key="x")), 7, 30.0, TraceRate((0.0, 5.0), (10.0, 12.5)))
    store.create_profile("p1", "shop", 1, "{}")
    store.save_sample("p1", "shop", 5, sample)
    assert store.sample("p1") == sample and store.sample("p2") is None
    assert store.latest_sample_profile("shop") == "p1" and store.latest_sample_profile("other") is None
    store.close()


def test_fidelity_compares_rate_and_the_top_keys_shares() -> None:
    sample = InputSample(tuple(rec(i, key="a" if i % 4 else "b") for i in range(400)), 400, 10, TraceRate((0.0,), (40.0,)))
    fidelity = replay_fidelity(sample, Counter({b"a": 300, b"b": 90}), target_rate=40, replayed_rate=41)
    assert fidelity.rate_error == pytest.approx(0.025) and fidelity.keys_compared == 2
    assert fidelity.key_share_error_max == pytest.approx(abs(90 / 390 / 0.25 - 1))
