"""A bounded input owned by one chaos experiment, and the exactly-once check over it.

The experiment's events carry keys no other load uses (a run prefix), so their committed output can
be told apart on topics shared with other load, and no other producer has to stop. Offsets are taken
at the start, so only what came after is read back. When the counted events end, uncounted events
(another prefix) keep flowing until the check is done: the demo job's windows close on event time,
and without later events its last windows would never be emitted. (A far-future flush event would
close them too, but would make every later event of a live job late, i.e. dropped.)

The truth is the input topic, not the producer's own count: a fault such as a broker restart can
fail a send, and that is not the job's loss.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable
from chronos.jobs.fleet import VehicleFleet
from chronos.jobs.loadgen import KafkaEventSink, LoadReport, run_load
from chronos.jobs.output import OutputRecord
from chronos.jobs.topic_offsets import groupless_consumer
from chronos.model import DeliveryCheck
from chronos.rates import ConstantRate

QUIET_S = 30.0  # output unchanged this long before the time is up: what is missing is lost, not late


def _assign_from(consumer: Any, topic: str, offsets: dict[Any, int] | None) -> dict[Any, int]:
    """Assign every partition of `topic`; seek to `offsets` (or take the current ends). Returns them."""
    from kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
    if not partitions:
        raise KafkaUnavailable(f"topic {topic} has no partitions (does it exist?)")
    consumer.assign(partitions)
    start = offsets if offsets is not None else dict(consumer.end_offsets(partitions))
    for tp in partitions:
        consumer.seek(tp, start[tp])
    return start


class ExperimentInput:
    """Counted events at `rate` from `start()` to `finish()`, then uncounted ones until the committed
    output of the counted keys stops changing or `timeout_s` passes."""

    def __init__(self, bootstrap: str, input_topic: str, output_topic: str, rate: float, vehicles: int,
                 run_id: str, *, seed: int = 0, settle_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 security: KafkaSecurity = PLAINTEXT) -> None:
        self.bootstrap, self.input_topic, self.output_topic = bootstrap, input_topic, output_topic
        self.security = security
        self.rate, self.vehicles, self.seed, self.settle_s = rate, vehicles, seed, settle_s
        self.prefix = f"x{run_id}"
        self._tail_prefix = f"t{run_id}"
        self._clock, self._sleep = clock, sleep
        self._stop_counted = threading.Event()
        self._stop_tail = threading.Event()
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._input_start: dict[Any, int] | None = None
        self._output_start: dict[Any, int] | None = None
        self.report: LoadReport | None = None
        self.input_read_s: float | None = None  # how long finish() took to count the input: the check's own cost

    def _produce(self, prefix: str, stop: threading.Event, keep: bool) -> None:
        try:
            sink = KafkaEventSink(self.bootstrap, self.input_topic, self.security)
            try:
                fleet = VehicleFleet(self.vehicles, seed=self.seed, run_id=prefix, prefix=prefix)
                report = run_load(sink, fleet, ConstantRate(self.rate), duration_s=float("inf"),
                                  should_stop=stop.is_set)
                if keep:
                    self.report = report
            finally:
                sink.close()
        except BaseException as exc:  # noqa: BLE001 - surfaced by finish()
            self._errors.append(exc)

    def _spawn(self, prefix: str, stop: threading.Event, keep: bool) -> threading.Thread:
        thread = threading.Thread(target=self._produce, args=(prefix, stop, keep), daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def start(self) -> None:
        for topic, attr in ((self.input_topic, "_input_start"), (self.output_topic, "_output_start")):
            consumer = groupless_consumer(self.bootstrap, "read_uncommitted", self.security)
            try:
                setattr(self, attr, _assign_from(consumer, topic, None))
            finally:
                consumer.close()
        self._counted = self._spawn(self.prefix, self._stop_counted, keep=True)

    def _input_counts(self) -> Counter[str]:
        """Per key, the counted events in the input topic (all of them: the producer has flushed)."""
        consumer = groupless_consumer(self.bootstrap, "read_uncommitted", self.security)
        counts: Counter[str] = Counter()
        mine = (self.prefix + "-").encode()
        try:
            _assign_from(consumer, self.input_topic, self._input_start)
            ends = consumer.end_offsets(list(consumer.assignment()))
            while any(consumer.position(tp) < end for tp, end in ends.items()):
                for messages in consumer.poll(timeout_ms=500, max_records=50_000).values():
                    for m in messages:
                        if m.key is not None and m.key.startswith(mine):
                            counts[m.key.decode()] += 1
        finally:
            consumer.close()
        return counts

    def finish(self, timeout_s: float) -> DeliveryCheck:
        """End the counted events and compare, per key, the input topic with the committed output."""
        self._stop_counted.set()
        self._counted.join(60)
        if self._errors:
            raise KafkaUnavailable(f"the experiment's load failed: {self._errors[0]}")
        self._spawn(self._tail_prefix, self._stop_tail, keep=False)
        try:
            began = self._clock()
            expected = self._input_counts()
            self.input_read_s = self._clock() - began
            observed: Counter[str] = Counter()
            consumer = groupless_consumer(self.bootstrap, "read_committed", self.security)
            deadline = self._clock() + timeout_s
            settled_at: float | None = None
            changed_at = self._clock()
            mine = (self.prefix + "-").encode()
            try:
                _assign_from(consumer, self.output_topic, self._output_start)
                while self._clock() < deadline:
                    for messages in consumer.poll(timeout_ms=500).values():
                        for m in messages:
                            if m.value is None or mine not in m.value:  # a busy job's output: millions not ours
                                continue
                            record = OutputRecord.parse(m.value)
                            if record is not None and record.kind == "vehicle" and record.key.startswith(self.prefix + "-"):
                                observed[record.key] += record.event_count
                                changed_at = self._clock()
                    if observed == expected:
                        settled_at = settled_at or self._clock()
                        if self._clock() - settled_at >= self.settle_s:  # a late duplicate would show by now
                            break
                    else:
                        settled_at = None
            finally:
                consumer.close()
            # Short, but the output grew within the last QUIET_S: the job is still catching up, not losing.
            return DeliveryCheck.compare(expected, observed,
                                         settled=observed == expected or self._clock() - changed_at >= QUIET_S)
        finally:
            self.close()

    def close(self) -> None:
        self._stop_counted.set()
        self._stop_tail.set()
        for thread in self._threads:
            thread.join(30)
