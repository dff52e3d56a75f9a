"""Reading the live job's input topics for a sample, without a trace: no consumer group, nothing committed,
every partition assigned by hand and read from its end (what arrives from now on), read_committed (what the
job itself would read from a transactional producer). The live job's group offsets are never touched."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable
from chronos.jobs.topic_offsets import END_OFFSETS_TIMEOUT_MS, groupless_consumer
from chronos.profiler.input_sample import InputRecord, Partition


class TopicRecorder:
    def __init__(self, bootstrap: str, topics: tuple[str, ...], *, from_start: bool = False,
                 security: KafkaSecurity = PLAINTEXT) -> None:
        """`from_start`: read what the topics hold instead (a bench reading back a replay)."""
        from kafka import TopicPartition

        self._consumer = groupless_consumer(bootstrap, isolation="read_committed", security=security)
        assigned = []
        for topic in topics:
            partitions = self._consumer.partitions_for_topic(topic)
            if not partitions:
                self._consumer.close()
                raise KafkaUnavailable(f"topic {topic} does not exist on {bootstrap}")
            assigned += [TopicPartition(topic, p) for p in sorted(partitions)]
        self._partitions: list[Any] = assigned
        self._consumer.assign(assigned)
        if from_start:
            self._consumer.seek_to_beginning(*assigned)
        else:
            self._consumer.seek_to_end(*assigned)
        for partition in assigned:
            self._consumer.position(partition)  # resolve the end now, not at the first poll

    def poll(self, timeout_s: float) -> list[InputRecord]:
        out: list[InputRecord] = []
        for partition, messages in self._consumer.poll(timeout_ms=int(timeout_s * 1000)).items():
            out += [InputRecord(partition.topic, partition.partition, m.offset, m.key, m.value,
                                tuple((str(k), bytes(v or b"")) for k, v in m.headers or ()), int(m.timestamp))
                    for m in messages]
        out.sort(key=lambda r: r.timestamp_ms)  # one poll's partitions, merged in time order
        return out

    def end_offsets(self) -> Mapping[Partition, int]:
        ends = self._consumer.end_offsets(self._partitions, timeout_ms=END_OFFSETS_TIMEOUT_MS)
        return {(p.topic, p.partition): int(o) for p, o in ends.items()}

    def positions(self) -> Mapping[Partition, int]:
        return {(p.topic, p.partition): int(self._consumer.position(p)) for p in self._partitions}

    def close(self) -> None:
        self._consumer.close()
