"""End offsets of a topic, for recording its arrival rate without consuming it."""

from __future__ import annotations

from typing import Any

from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import require_reachable


class TopicEndOffsets:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        require_reachable(bootstrap)
        try:
            self._consumer: Any = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
        except (KafkaError, OSError, ValueError) as exc:
            raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({type(exc).__name__})") from exc
        partitions = self._consumer.partitions_for_topic(topic)
        if not partitions:
            self._consumer.close()
            raise KafkaUnavailable(f"topic {topic} does not exist on {bootstrap}")
        self._partitions = [TopicPartition(topic, p) for p in sorted(partitions)]

    def total_end_offset(self) -> int:
        return int(sum(self._consumer.end_offsets(self._partitions).values()))

    def close(self) -> None:
        self._consumer.close()
