"""`chronos load`: produce the fleet's events at a profile's rate, and say what rate was achieved.

The pacing loop is pure apart from the sink, clock and sleep handed in, so tests drive it with a
fake clock; the Kafka sink is the only I/O.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from chronos.clock import wall_ms
from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.jobs.fleet import VehicleFleet, flush_event
from chronos.jobs.record_producer import RecordProducer
from chronos.rates import RateProfile


class EventSink(Protocol):
    def send(self, key: bytes | None, value: bytes, partition: int | None = None) -> None: ...
    def partitions(self) -> tuple[int, ...]: ...
    def flush(self) -> None: ...


@dataclass(frozen=True)
class LoadProgress:
    elapsed_s: float
    sent: int
    target_rate: float
    achieved_rate: float  # over the last report interval


@dataclass(frozen=True)
class LoadReport:
    sent: int
    elapsed_s: float
    achieved_rate: float
    per_vehicle: tuple[tuple[str, int], ...]

    def count_of(self, vehicle_id: str) -> int:
        return dict(self.per_vehicle).get(vehicle_id, 0)


def run_load(
    sink: EventSink,
    fleet: VehicleFleet,
    profile: RateProfile,
    *,
    duration_s: float | None = None,
    max_events: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = wall_ms,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Callable[[LoadProgress], None] | None = None,
    report_every_s: float = 1.0,
    should_stop: Callable[[], bool] = lambda: False,
    close_windows: bool = False,
    max_batch: int = 2000,
) -> LoadReport:
    """Send events until `duration_s` passes, `max_events` are sent or `should_stop()`.

    With `close_windows` a flush event goes to every partition at the end, so that a bounded run's
    last windows close and its output is complete.
    """
    counts: Counter[str] = Counter()

    def send_batch(batch: int, stamp: int) -> None:
        for _ in range(batch):
            key, value = fleet.next_event(stamp)
            sink.send(key.encode(), value)
            counts[key] += 1

    sent, elapsed = paced(profile, send_batch, duration_s=duration_s, max_events=max_events, clock=clock,
                          wall_ms=wall_ms, sleep=sleep, on_progress=on_progress, report_every_s=report_every_s,
                          should_stop=should_stop, max_batch=max_batch)
    if close_windows:
        for partition in sink.partitions():
            sink.send(None, flush_event(wall_ms()), partition=partition)
    sink.flush()
    return LoadReport(sent, elapsed, sent / elapsed if elapsed > 0 else 0.0, tuple(sorted(counts.items())))


def paced(
    profile: RateProfile,
    send_batch: Callable[[int, int], None],
    *,
    duration_s: float | None = None,
    max_events: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = wall_ms,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Callable[[LoadProgress], None] | None = None,
    report_every_s: float = 1.0,
    should_stop: Callable[[], bool] = lambda: False,
    max_batch: int = 2000,
) -> tuple[int, float]:
    """Call `send_batch(n, wall-clock ms)` as the profile's rate accrues, until `duration_s` passes,
    `max_events` are sent or `should_stop()`; returns (events sent, seconds taken). Any producer's pace."""
    if duration_s is None and max_events is None:
        raise ValueError("a load run needs a duration or an event count")
    start = last = last_report = clock()
    owed = 0.0
    sent = sent_at_report = 0
    while not should_stop():
        now = clock()
        elapsed = now - start
        if duration_s is not None and elapsed >= duration_s:
            break
        if max_events is not None and sent >= max_events:
            break
        owed += profile.rate_at(elapsed) * (now - last)
        last = now
        batch = min(int(owed), max_batch)
        if max_events is not None:
            batch = min(batch, max_events - sent)
        if batch <= 0:
            sleep(0.002)
            continue
        send_batch(batch, wall_ms())
        owed -= batch
        sent += batch
        if on_progress is not None and now - last_report >= report_every_s:
            rate = (sent - sent_at_report) / (now - last_report)
            on_progress(LoadProgress(elapsed, sent, profile.rate_at(elapsed), rate))
            last_report, sent_at_report = now, sent
    return sent, clock() - start


class KafkaEventSink:
    """The load generator's events to one topic (chronos.jobs.record_producer says which client, and why)."""

    def __init__(self, bootstrap: str, topic: str, security: KafkaSecurity = PLAINTEXT) -> None:
        self._topic = topic
        self._producer = RecordProducer(bootstrap, security)

    def send(self, key: bytes | None, value: bytes, partition: int | None = None) -> None:
        self._producer.send(self._topic, key, value, partition=partition or 0)

    def partitions(self) -> tuple[int, ...]:
        return self._producer.partitions(self._topic)

    def flush(self) -> None:
        self._producer.flush()

    def close(self) -> None:
        self._producer.close()
