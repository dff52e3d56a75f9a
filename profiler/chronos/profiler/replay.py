"""Replaying a recorded input sample into a profiling copy's own topics: the records in their order of
arrival, looping when the sample is shorter than the run, each sent to the copy's topic standing for the live
one it came from, with its key (so the key space and the partitioning by key hold), its headers, and its times
moved to the moment it is sent (`EventTimeFields`). The pace is the load generator's; this part only says what
the next record is.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chronos.errors import InvalidInput
from chronos.profiler.event_time import EventTimeFields
from chronos.profiler.input_sample import InputRecord, InputSample


@dataclass(frozen=True)
class OutgoingRecord:
    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int
    partition: int  # the recorded partition: where a record with no key goes (modulo the copy's partitions)


class ReplayFeed:
    def __init__(self, records: Sequence[InputRecord], topics: Mapping[str, str], fields: EventTimeFields) -> None:
        if not records:
            raise ValueError("nothing to replay")
        missing = sorted({r.topic for r in records} - set(topics))
        if missing:
            raise ValueError(f"no copy topic for {', '.join(missing)}")
        self._records, self._topics, self._fields = records, topics, fields
        self._next = 0
        self.loops = 0

    def next(self, now_ms: int) -> OutgoingRecord:
        record = self._records[self._next]
        self._next += 1
        if self._next == len(self._records):
            self._next, self.loops = 0, self.loops + 1
        delta = now_ms - record.timestamp_ms
        return OutgoingRecord(self._topics[record.topic], record.key, self._fields.shift(record.value, delta),
                              record.headers, now_ms, record.partition)


def worker_share(records: Sequence[InputRecord], worker: int, workers: int) -> tuple[InputRecord, ...]:
    """One producer's part of the sample when several share the rate: by key, so a key's records stay in one
    producer and in order (a record with no key goes by its partition)."""
    def owner(record: InputRecord) -> int:
        return (zlib.crc32(record.key) if record.key is not None else record.partition) % workers
    return tuple(r for r in records if owner(r) == worker)


def check_event_time(fields: EventTimeFields, sample: InputSample) -> None:
    """Each named field must be found, holding a time, in at least one recorded record: a path that finds
    nothing would leave the copies' event times in the past, silently."""
    found: set[int] = set()
    for record in sample.records[:5000]:
        found.update(fields.matches(record.value))
        if len(found) == len(fields.paths):
            return
    for i, path in enumerate(fields.paths):
        if i not in found:
            example = sample.records[0].value or b""
            shown = example[:300].decode(errors="replace")
            with contextlib.suppress(ValueError, RecursionError):
                shown = json.dumps(json.loads(example), separators=(",", ":"))[:300]
            raise InvalidInput(f"event-time field {path} matches no time in the {min(len(sample.records), 5000)} "
                               f"recorded records; an example record: {shown}")


@dataclass(frozen=True)
class Fidelity:
    """How closely a replay followed its sample: rate and the shares of the sample's most frequent keys."""

    target_rate: float
    replayed_rate: float
    rate_error: float  # |replayed / target - 1|
    keys_compared: int
    key_share_error_max: float  # of the sample's top keys: |replayed share / sample share - 1|, the worst
    key_share_error_median: float


def replay_fidelity(sample: InputSample, replayed_keys: Counter[bytes | None], target_rate: float,
                    replayed_rate: float, top: int = 100) -> Fidelity:
    shares = sample.key_shares(top)
    total = sum(replayed_keys.values()) or 1
    errors = sorted(abs(replayed_keys.get(key, 0) / total / share - 1) for key, share in shares.items())
    return Fidelity(target_rate, replayed_rate, abs(replayed_rate / target_rate - 1) if target_rate else 0.0,
                    len(errors), errors[-1] if errors else 0.0, errors[len(errors) // 2] if errors else 0.0)
