"""A sample of the live job's own input, recorded so profiling copies are fed what the job really reads.

Recorded read-only: the reader (an adapter) has no consumer group, commits nothing and starts at the end of
every partition, so the live job's group offsets and its input are untouched. Over the window it also reads
the topics' end offsets every step: the rate trace comes from them (what arrived), the records from the
reader. When more records arrive than the bound allows, the sample keeps a uniform share of them (reservoir
sampling, seeded), in their order of arrival: the key distribution holds, the rate comes from the trace.

The sample is stored with the profile (zlib-compressed JSON lines) so `--resume` and later profiles reuse it.
"""

from __future__ import annotations

import base64
import json
import math
import random
import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from chronos.errors import InvalidInput
from chronos.rates import TraceRate

Partition = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class InputRecord:
    topic: str  # the live input topic it was read from
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value or b"") + sum(len(k) + len(v) for k, v in self.headers) + 32


@dataclass(frozen=True)
class SampleLimits:
    max_records: int = 500_000
    max_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class InputSample:
    records: tuple[InputRecord, ...]
    seen: int  # records read in the window; `records` is all of them or a uniform share
    window_s: float
    trace: TraceRate  # the window's arrival rate, from the end offsets

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({r.topic for r in self.records}))

    @property
    def size_bytes(self) -> int:
        return sum(r.size for r in self.records)

    def key_shares(self, top: int = 100) -> dict[bytes | None, float]:
        """The `top` most frequent keys and their share of the records."""
        counts = Counter(r.key for r in self.records)
        return {key: n / len(self.records) for key, n in counts.most_common(top)}

    def to_bytes(self) -> bytes:
        lines = [json.dumps({"window_s": self.window_s, "seen": self.seen, "trace": [self.trace.times_s, self.trace.rates]})]
        lines += [json.dumps([r.topic, r.partition, r.offset, _b64(r.key), _b64(r.value),
                              [[k, _b64(v)] for k, v in r.headers], r.timestamp_ms]) for r in self.records]
        return zlib.compress("\n".join(lines).encode(), 6)

    @staticmethod
    def from_bytes(data: bytes, max_bytes: int = 0) -> InputSample:
        """A sample read back from the store: inflated no further than any sample chronos writes (`max_bytes`,
        MAX_STORED_BYTES unless given: a few KB could hold a GiB), its numbers finite."""
        cap = max_bytes or MAX_STORED_BYTES
        try:
            inflate = zlib.decompressobj()
            text = inflate.decompress(data, cap + 1)
            if len(text) > cap or inflate.unconsumed_tail:
                raise ValueError(f"it inflates past {cap >> 20} MiB, more than any sample chronos keeps")
            head, *rows = text.decode().split("\n")
            meta = json.loads(head, parse_float=_finite)
            records = tuple(InputRecord(str(t), int(p), int(o), _unb64(k), _unb64(v),
                                        tuple((str(hk), _unb64(hv) or b"") for hk, hv in h), int(ts))
                            for t, p, o, k, v, h, ts in map(json.loads, rows))
            times, rates = meta["trace"]
            return InputSample(records, int(meta["seen"]), float(meta["window_s"]),
                               TraceRate(tuple(map(float, times)), tuple(map(float, rates))))
        except (zlib.error, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise InvalidInput(f"a stored input sample does not read ({type(exc).__name__}: {str(exc)[:200]})") from exc


# What a sample serializes to at most (SampleLimits' 64 MiB of keys and values, base64, and its JSON per record).
MAX_STORED_BYTES = 256 << 20


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:24]} is out of range")
    return value


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class RecordReader(Protocol):
    """A group-less, never-committing reader of the live input topics, positioned at their ends when opened."""

    def poll(self, timeout_s: float) -> list[InputRecord]: ...
    def end_offsets(self) -> Mapping[Partition, int]: ...
    def positions(self) -> Mapping[Partition, int]: ...


class Reservoir:
    """A uniform sample of a stream, bounded in records and bytes (algorithm R; a random member leaves when
    the bytes overflow, which keeps it uniform), returned in arrival order."""

    def __init__(self, limits: SampleLimits, seed: int) -> None:
        self._limits, self._rng = limits, random.Random(seed)
        self._kept: list[tuple[int, InputRecord]] = []
        self._capacity, self._bytes, self.seen = limits.max_records, 0, 0

    def add(self, record: InputRecord) -> None:
        self.seen += 1
        if len(self._kept) < self._capacity:
            self._kept.append((self.seen, record))
            self._bytes += record.size
        else:
            slot = self._rng.randrange(self.seen)
            if slot >= self._capacity:
                return
            self._bytes += record.size - self._kept[slot][1].size
            self._kept[slot] = (self.seen, record)
        while self._bytes > self._limits.max_bytes and len(self._kept) > 1:
            gone = self._kept.pop(self._rng.randrange(len(self._kept)))
            self._bytes -= gone[1].size
            self._capacity = len(self._kept)

    def records(self) -> tuple[InputRecord, ...]:
        return tuple(record for _, record in sorted(self._kept, key=lambda kept: kept[0]))


def record_sample(
    reader: RecordReader,
    topics: tuple[str, ...],
    window_s: float,
    *,
    every_s: float = 5.0,
    limits: SampleLimits = SampleLimits(),
    seed: int = 0,
    drain_s: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
    on_point: Callable[[float, float, int], None] = lambda t, rate, records: None,
) -> InputSample:
    """Read the live input for `window_s`: the records that arrived in it (every partition read up to its end
    offset at the window's close, for at most `drain_s` more) and the rate of every `every_s` step."""
    if window_s < every_s or every_s <= 0:
        raise InvalidInput(f"a recording window ({window_s:g} s) needs at least one step of {every_s:g} s")
    reservoir = Reservoir(limits, seed)
    start = clock()
    last_t, last_total = start, sum(reader.end_offsets().values())
    times: list[float] = []
    rates: list[float] = []
    ends: Mapping[Partition, int] = {}
    for step in range(1, int(window_s // every_s + 1e-9) + 1):
        while clock() < start + step * every_s:
            for record in reader.poll(max(0.0, min(0.2, start + step * every_s - clock()))):
                reservoir.add(record)
        now, ends = clock(), reader.end_offsets()
        total = sum(ends.values())
        times.append(round(last_t - start, 3))
        rates.append(max(0.0, (total - last_total) / (now - last_t)) if now > last_t else 0.0)
        on_point(times[-1], rates[-1], reservoir.seen)
        last_t, last_total = now, total
    deadline = clock() + drain_s
    while clock() < deadline and any(reader.positions().get(p, 0) < end for p, end in ends.items()):
        for record in reader.poll(0.2):
            if record.offset < ends.get((record.topic, record.partition), 0):
                reservoir.add(record)
    if reservoir.seen == 0:
        raise InvalidInput(f"the input topic{'s' if len(topics) > 1 else ''} {', '.join(topics)} carried no records "
                           f"during the {window_s:g} s recording: record while the job has load, or give --sample "
                           "PROFILE to replay a stored one")
    return InputSample(reservoir.records(), reservoir.seen, window_s, TraceRate(tuple(times), tuple(rates)))
