"""End offsets of a topic, for recording its arrival rate without consuming it."""

from __future__ import annotations

from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import client_refused, require_accepted

# An end-offsets request that does not answer within this is a missing reading, not a stalled tuner.
END_OFFSETS_TIMEOUT_MS = 5000


def groupless_consumer(bootstrap: str, isolation: str = "read_uncommitted", security: KafkaSecurity = PLAINTEXT) -> Any:
    """A consumer in no group that commits nothing: it reads or inspects a topic without a trace."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    require_accepted(bootstrap, security)
    try:
        # 8 MiB per partition and fetch (not 1 MiB): the exactly-once check reads a busy job's millions of records.
        return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation, request_timeout_ms=30000,
                             max_partition_fetch_bytes=8 * 1024 * 1024, **security.kafka_python_settings())
    except (KafkaError, OSError, ValueError) as exc:
        raise client_refused(exc, bootstrap, security) from None


class TopicEndOffsets:
    """The end offsets of one or several topics (a job's inputs), added up."""

    def __init__(self, bootstrap: str, topic: str, *more: str, security: KafkaSecurity = PLAINTEXT) -> None:
        from kafka import TopicPartition

        self._consumer = groupless_consumer(bootstrap, security=security)
        self._partitions = []
        for name in (topic, *more):
            partitions = self._consumer.partitions_for_topic(name)
            if not partitions:
                self._consumer.close()
                raise KafkaUnavailable(f"topic {name} does not exist on {bootstrap}")
            self._partitions += [TopicPartition(name, p) for p in sorted(partitions)]

    def total_end_offset(self) -> int:
        """Raises KafkaUnavailable when the broker does not answer in time: a broker starved of CPU (two profiling
        copies beside a busy live job on two cores) timed out here and answered a metadata request with no
        brokers, both retriable; a missing reading, never a reason to end a run."""
        from kafka.errors import KafkaError

        try:
            ends = self._consumer.end_offsets(self._partitions, timeout_ms=END_OFFSETS_TIMEOUT_MS)
        except KafkaError as exc:
            raise KafkaUnavailable(f"no end offsets from Kafka ({type(exc).__name__}: {exc})"[:300]) from exc
        return int(sum(ends.values()))

    def close(self) -> None:
        self._consumer.close()


class BrokerEndOffsets:
    """The end offsets of every topic many jobs read from one broker, asked in one request per round: a controller
    of fifty jobs asks the broker once every few seconds, not fifty times. `ends_of(topics)` is one job's view
    (`total_end_offset` and `close`, as TopicEndOffsets); an answer younger than `fresh_s` is shared by every view.
    Thread-safe: the jobs' steps run on several workers, and one of them asks while the others wait for its answer.

    One job's trouble stays its own: a view closed takes its topics out of the request, and after a shared request
    fails (a topic deleted under its job, say) each view asks for its own topics alone for `alone_s`, so the jobs
    whose topics answer keep their readings."""

    def __init__(self, bootstrap: str, fresh_s: float, clock: Any = None, alone_s: float = 60.0,
                 consumer: Any = None, security: KafkaSecurity = PLAINTEXT) -> None:
        import threading
        import time

        self._bootstrap = bootstrap
        self._consumer = consumer if consumer is not None else groupless_consumer(bootstrap, security=security)
        self._fresh_s, self._alone_s = fresh_s, alone_s
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._partitions: dict[str, list[Any]] = {}
        self._users: dict[str, int] = {}  # views reading each topic
        self._answer: tuple[float, dict[Any, int]] | None = None
        self._alone_until = 0.0
        self.requests = 0  # end-offset requests made (what the sharing saves is measured by it)

    def ends_of(self, topics: tuple[str, ...]) -> _TopicsView:
        from kafka import TopicPartition

        with self._lock:
            for name in topics:
                if name not in self._partitions:
                    found = self._consumer.partitions_for_topic(name)
                    if not found:
                        raise KafkaUnavailable(f"topic {name} does not exist on {self._bootstrap}")
                    self._partitions[name] = [TopicPartition(name, p) for p in sorted(found)]
                    self._answer = None  # the next round asks for it too
            for name in topics:
                self._users[name] = self._users.get(name, 0) + 1
        return _TopicsView(self, topics)

    def release(self, topics: tuple[str, ...]) -> None:
        with self._lock:
            for name in topics:
                self._users[name] -= 1
                if self._users[name] <= 0:
                    del self._users[name], self._partitions[name]

    def _ask(self, partitions: list[Any]) -> dict[Any, int]:
        from kafka.errors import KafkaError

        self.requests += 1
        try:
            ends: dict[Any, int] = self._consumer.end_offsets(partitions, timeout_ms=END_OFFSETS_TIMEOUT_MS)
        except KafkaError as exc:
            raise KafkaUnavailable(f"no end offsets from Kafka ({type(exc).__name__}: {exc})"[:300]) from exc
        return ends

    def total(self, topics: tuple[str, ...]) -> int:
        with self._lock:
            now = self._clock()
            mine = [tp for name in topics for tp in self._partitions[name]]
            if now < self._alone_until:
                return int(sum(self._ask(mine).values()))
            if self._answer is None or now - self._answer[0] >= self._fresh_s:
                try:
                    self._answer = (now, self._ask([tp for ps in self._partitions.values() for tp in ps]))
                except KafkaUnavailable:
                    self._alone_until = now + self._alone_s  # whose topic failed is not known: each asks alone
                    self._answer = None
                    return int(sum(self._ask(mine).values()))
            ends = self._answer[1]
            return int(sum(ends[tp] for tp in mine))

    def close(self) -> None:
        self._consumer.close()


class _TopicsView:
    """One job's topics on a shared BrokerEndOffsets; closing it takes them out of the shared request (the broker's
    consumer stays its owner's)."""

    def __init__(self, broker: BrokerEndOffsets, topics: tuple[str, ...]) -> None:
        self._broker, self._topics = broker, topics
        self._closed = False

    def total_end_offset(self) -> int:
        return self._broker.total(self._topics)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._broker.release(self._topics)
