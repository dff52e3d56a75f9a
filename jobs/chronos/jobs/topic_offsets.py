"""End offsets of a topic, for recording its arrival rate without consuming it."""

from __future__ import annotations

from typing import Any

from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import require_reachable

# An end-offsets request that does not answer within this is a missing reading, not a stalled tuner.
END_OFFSETS_TIMEOUT_MS = 5000


def groupless_consumer(bootstrap: str, isolation: str = "read_uncommitted") -> Any:
    """A consumer in no group that commits nothing: it reads or inspects a topic without a trace."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    require_reachable(bootstrap)
    try:
        # 8 MiB per partition and fetch (not 1 MiB): the exactly-once check reads a busy job's millions of records.
        return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation, request_timeout_ms=30000,
                             max_partition_fetch_bytes=8 * 1024 * 1024)
    except (KafkaError, OSError, ValueError) as exc:
        raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({type(exc).__name__})") from exc


class TopicEndOffsets:
    """The end offsets of one or several topics (a job's inputs), added up."""

    def __init__(self, bootstrap: str, topic: str, *more: str) -> None:
        from kafka import TopicPartition

        self._consumer = groupless_consumer(bootstrap)
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
    Thread-safe: the jobs' steps run on several workers, and one of them asks while the others wait for its answer."""

    def __init__(self, bootstrap: str, fresh_s: float, clock: Any = None) -> None:
        import threading
        import time

        self._bootstrap = bootstrap
        self._consumer = groupless_consumer(bootstrap)
        self._fresh_s = fresh_s
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._partitions: dict[str, list[Any]] = {}
        self._answer: tuple[float, dict[Any, int]] | None = None

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
        return _TopicsView(self, topics)

    def total(self, topics: tuple[str, ...]) -> int:
        from kafka.errors import KafkaError

        with self._lock:
            now = self._clock()
            if self._answer is None or now - self._answer[0] >= self._fresh_s:
                everything = [tp for partitions in self._partitions.values() for tp in partitions]
                try:
                    ends = self._consumer.end_offsets(everything, timeout_ms=END_OFFSETS_TIMEOUT_MS)
                except KafkaError as exc:
                    raise KafkaUnavailable(f"no end offsets from Kafka ({type(exc).__name__}: {exc})"[:300]) from exc
                self._answer = (now, ends)
            ends = self._answer[1]
            return int(sum(ends[tp] for name in topics for tp in self._partitions[name]))

    def close(self) -> None:
        self._consumer.close()


class _TopicsView:
    """One job's topics on a shared BrokerEndOffsets; closing it leaves the broker's consumer to its owner."""

    def __init__(self, broker: BrokerEndOffsets, topics: tuple[str, ...]) -> None:
        self._broker, self._topics = broker, topics

    def total_end_offset(self) -> int:
        return self._broker.total(self._topics)

    def close(self) -> None:
        return None
