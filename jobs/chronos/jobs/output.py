"""Reading the demo job's committed output: records, end-to-end latency, per-key totals.

Only `read_committed` output counts: that is what a downstream consumer of an exactly-once job sees,
so latency includes the wait for the checkpoint that commits it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.jobs.kafka_bootstrap import client_refused, require_accepted


@dataclass(frozen=True)
class OutputRecord:
    kind: str  # "vehicle" | "region"
    key: str
    window_end: str
    event_count: int
    max_created_ms: int

    @staticmethod
    def parse(raw: bytes, timestamp_field: str = "max_created_ms") -> OutputRecord | None:
        """A JSON output record; only the timestamp is required, so any job whose output carries the
        creation time of its newest input can be observed (kind, key, window and count are the demo's)."""
        try:
            data: dict[str, Any] = json.loads(raw)
            return OutputRecord(str(data.get("kind", "")), str(data.get("key", "")), str(data.get("window_end", "")),
                                int(data.get("event_count", 1)), int(data[timestamp_field]))
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            return None  # anyone can write to the topic: what is not an output record is skipped


def committed_consumer(bootstrap: str, topic: str, from_beginning: bool, idle_fetch_ms: int = 500,
                       security: KafkaSecurity = PLAINTEXT) -> Any:
    """`idle_fetch_ms`: how long the broker holds a fetch that finds nothing new (it answers at once when there is):
    a watcher that runs for weeks raises it, and asks the broker (and wakes its own network thread) less often."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    require_accepted(bootstrap, security)
    try:
        return KafkaConsumer(
            topic, bootstrap_servers=bootstrap, isolation_level="read_committed",
            auto_offset_reset="earliest" if from_beginning else "latest", enable_auto_commit=False,
            group_id=None, request_timeout_ms=30000, consumer_timeout_ms=1000,
            # kafka-python checks CRC32C in pure Python: most of an observer's CPU. The records come over
            # TCP (checksummed) from a broker that verified them on append.
            check_crcs=False, fetch_max_wait_ms=idle_fetch_ms, **security.kafka_python_settings(),
        )
    except (KafkaError, OSError, ValueError) as exc:
        raise client_refused(exc, bootstrap, security) from None


def committed_records(consumer: Any, poll_ms: int = 500, timestamp_field: str = "max_created_ms") -> Iterator[list[OutputRecord]]:
    """Batches of parsed committed records, an empty batch when nothing came within `poll_ms`."""
    while True:
        batch: list[OutputRecord] = []
        for messages in consumer.poll(timeout_ms=poll_ms).values():
            for message in messages:
                record = OutputRecord.parse(message.value, timestamp_field)
                if record is not None:
                    batch.append(record)
        yield batch


def output_totals(
    bootstrap: str,
    topic: str,
    kind: str,
    expected_total: int,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    security: KafkaSecurity = PLAINTEXT,
) -> Counter[str]:
    """Sum `event_count` per key of one kind from the start of the topic until the totals reach
    `expected_total` and stay there for a few polls, or `timeout_s` passes."""
    consumer = committed_consumer(bootstrap, topic, from_beginning=True, security=security)
    totals: Counter[str] = Counter()
    deadline = clock() + timeout_s
    quiet_polls = 0
    try:
        for batch in committed_records(consumer):
            for record in batch:
                if record.kind == kind:
                    totals[record.key] += record.event_count
            done = sum(totals.values()) >= expected_total
            quiet_polls = quiet_polls + 1 if (done and not batch) else 0
            if quiet_polls >= 4 or clock() >= deadline:
                break
    finally:
        consumer.close()
    return totals
