"""The one Kafka producer of chronos's loads (the load generator, the shop's load, the replay into profiling
copies): librdkafka through confluent-kafka rather than kafka-python.

Why: a load runs beside the job under test, on the cores that job needs. Paced at 1000 records/s for 10 s
against the local broker, kafka-python's producer cost 0.34 of a core (Python per produce request) and the broker
0.30 (a request every 5 ms); librdkafka lingering 5 ms 0.11 and 0.25, lingering LINGER_MS 0.07 and 0.10 (at 50 ms:
0.05 and 0.05). The broker's share is per request, so the linger is what saves most; it delays a record by at most
that long after its event time, against latencies of seconds that the jobs' checkpoints set.

Every record is checked: one that librdkafka could not deliver within its timeout (it retries meanwhile,
idempotently: a retry never writes a record twice, which an exactly-once check would count as a duplicate) fails
`flush` with one line, so a load never counts a record as sent that the broker did not take.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable, scrub
from chronos.jobs.kafka_bootstrap import require_accepted
from chronos.profiler.replay import OutgoingRecord

LINGER_MS = 20
DELIVERY_TIMEOUT_MS = 60_000  # retried until then: a broker restart of a few seconds loses nothing
METADATA_TIMEOUT_S = 15.0
FLUSH_TIMEOUT_S = 60.0


class RecordProducer:
    """Records to any topic; a keyed record goes to crc32(key) modulo the topic's partitions (a key always lands in
    one partition, which is all the jobs' ordering needs), an unkeyed one to the partition it names (modulo)."""

    def __init__(self, bootstrap: str, security: KafkaSecurity = PLAINTEXT) -> None:
        from confluent_kafka import KafkaException, Producer

        require_accepted(bootstrap, security)
        secured = security.librdkafka_settings()
        self._secrets = security.secrets()
        try:
            self._producer = Producer({
                "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": LINGER_MS,
                "batch.size": 256 * 1024, "message.timeout.ms": DELIVERY_TIMEOUT_MS, "socket.timeout.ms": 15_000,
                "log_level": 3,  # errors only: a broker restart is retried, not worth a line per connection
                **secured,
            })
        except KafkaException as exc:
            raise KafkaUnavailable(f"cannot make a Kafka producer for {bootstrap}: {scrub(str(exc), self._secrets)}") from None
        self._bootstrap = bootstrap
        self._partitions: dict[str, tuple[int, ...]] = {}
        self._failed: str | None = None
        self._failures = 0

    def partitions(self, topic: str) -> tuple[int, ...]:
        parts = self._partitions.get(topic)
        if parts is None:
            from confluent_kafka import KafkaException

            try:
                described = self._producer.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
            except KafkaException as exc:
                raise KafkaUnavailable(f"cannot read topic {topic}'s partitions from {self._bootstrap}: "
                                       f"{scrub(str(exc), self._secrets)}") from None
            found = sorted(described.partitions) if described is not None and described.error is None else []
            parts = self._partitions[topic] = tuple(found) or (0,)
        return parts

    def send(self, topic: str, key: bytes | None, value: bytes | None, *, partition: int = 0,
             headers: Sequence[tuple[str, bytes]] = (), timestamp_ms: int = 0) -> None:
        parts = self.partitions(topic)
        slot = zlib.crc32(key) if key is not None else partition
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, partition=parts[slot % len(parts)],
                                       headers=list(headers) or None, timestamp=timestamp_ms,
                                       on_delivery=self._delivered)
                break
            except BufferError:  # librdkafka's queue is full: let it send, then try again
                self._producer.poll(0.05)
        self._producer.poll(0)  # delivery reports of earlier records

    def send_record(self, record: OutgoingRecord) -> None:
        """A recorded (or made-up) record to its topic, with its headers and timestamp."""
        self.send(record.topic, record.key, record.value, partition=record.partition, headers=record.headers,
                  timestamp_ms=record.timestamp_ms)

    def _delivered(self, error: object, _message: object) -> None:
        if error is not None:
            self._failures += 1
            self._failed = self._failed or scrub(str(error), self._secrets)

    def flush(self) -> None:
        left = self._producer.flush(FLUSH_TIMEOUT_S)
        if left:
            raise KafkaUnavailable(f"{left} records not delivered to {self._bootstrap} within {FLUSH_TIMEOUT_S:.0f} s")
        if self._failed is not None:
            raise KafkaUnavailable(f"{self._failures} records not delivered to {self._bootstrap}: {self._failed}")

    def close(self) -> None:
        """What can still be delivered is; a failure is `flush`'s to say (a close on the way out of another
        error must not raise over it)."""
        self._producer.flush(FLUSH_TIMEOUT_S)
