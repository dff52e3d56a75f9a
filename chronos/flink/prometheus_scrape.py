"""Reading Flink's Prometheus reporter directly: its counters stay live where REST metric values
refresh only every fetcher interval and can go stale for minutes after a TaskManager loss."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from chronos.bounded_http import BoundedClient

_INVALID = re.compile(r"[^a-zA-Z0-9:_]")
RECORDS_OUT = "flink_taskmanager_job_task_operator_numRecordsOut"
CURRENT_OFFSET = "flink_taskmanager_job_task_operator_KafkaSourceReader_topic_partition_currentOffset"
COMMITTED_OFFSET = "flink_taskmanager_job_task_operator_KafkaSourceReader_topic_partition_committedOffset"
SOURCE_METRICS = (RECORDS_OUT + "{", CURRENT_OFFSET + "{", COMMITTED_OFFSET + "{")


def label_value(name: str) -> str:
    """The reporter's spelling of a job or operator name (characters outside [a-zA-Z0-9:_] become _)."""
    return _INVALID.sub("_", name)


@dataclass(frozen=True)
class PromSample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str:
        return dict(self.labels).get(key, "")


# A TaskManager's page is thousands of lines, written while its JVM may be starting beside others on a loaded
# host: a whole page within this, where an endpoint used to be given 3 s per socket read.
SCRAPE_DEADLINE_S = 10.0


def scrape(urls: Iterable[str], timeout_s: float = SCRAPE_DEADLINE_S, client: BoundedClient | None = None,
           names: Iterable[str] | None = None) -> list[PromSample]:
    """Samples from every reporter endpoint that answers (JobManager and TaskManagers share a range).

    Pass a long-lived `client` when scraping repeatedly: building one (its TLS context, even for plain
    http) cost a tuner more CPU than parsing the samples; and `names` to parse only those metrics (a
    TaskManager exports thousands of lines, the parser is pure Python). An endpoint that does not answer
    whole within `timeout_s`, or answers what is not the exposition format, is skipped like a dead one."""
    if client is None:
        with BoundedClient(deadline_s=timeout_s) as own:
            return scrape(urls, timeout_s, own, names)
    wanted = tuple(names) if names is not None else None
    samples: list[PromSample] = []
    for url in urls:
        try:
            text = client.get(url).text  # the client's own deadline
        except httpx.HTTPError:
            continue
        if wanted is not None:
            text = "\n".join(line for line in text.splitlines() if line.startswith(wanted)) + "\n"
        try:
            found = [PromSample(s.name, tuple(sorted(s.labels.items())), s.value)
                     for family in text_string_to_metric_families(text) for s in family.samples
                     if math.isfinite(s.value)]  # a NaN gauge is no reading: none is carried past here
        except (ValueError, TypeError, IndexError):  # the parser's word for "not the exposition format"
            continue
        samples.extend(found)
    return samples


def source_records_out(samples: Iterable[PromSample], job_name: str) -> float:
    """Records emitted by the job's source operators, summed over subtasks."""
    job = label_value(job_name)
    return sum(
        s.value for s in samples
        if s.name == RECORDS_OUT
        and s.label("job_name") == job and s.label("operator_name").startswith("Source")
    )


@dataclass(frozen=True)
class SourceOffsets:
    """The job's Kafka source position summed over partitions. `committed` (the offsets of the last
    completed checkpoint) is None until a checkpoint completes after a (re)start."""

    current: int
    committed: int | None

    @property
    def replay(self) -> int | None:
        """What a failure now would replay: records read since the last completed checkpoint."""
        return None if self.committed is None else self.current - self.committed


def source_offsets(samples: Iterable[PromSample], job_name: str) -> SourceOffsets | None:
    """The source's offsets, or None while it reports none (e.g. its task is down)."""
    job = label_value(job_name)
    current: dict[tuple[str, str], float] = {}
    committed: dict[tuple[str, str], float] = {}
    for s in samples:
        if s.label("job_name") != job:
            continue
        key = (s.label("topic"), s.label("partition"))
        if s.name == CURRENT_OFFSET:
            current[key] = s.value
        elif s.name == COMMITTED_OFFSET:
            committed[key] = s.value
    partitions = [k for k in current if current[k] >= 0]
    if not partitions:
        return None
    all_committed = all(committed.get(k, -1) >= 0 for k in partitions)
    return SourceOffsets(
        current=int(sum(current[k] for k in partitions)),
        committed=int(sum(committed[k] for k in partitions)) if all_committed else None,
    )


LATENCY_METRIC = "flink_taskmanager_job_task_latency_source_id_operator_id_operator_subtask_index_latency"


def marker_latency_p99_ms(samples: Iterable[PromSample], job_name: str) -> float | None:
    """The worst p99 of Flink's latency markers (source to each operator) for the job, in ms; None
    unless the job runs with `metrics.latency.interval` set. Markers skip windows and the sink's
    transaction commit, so this is a lower bound of end-to-end latency, not the same figure."""
    job = label_value(job_name)
    values = [s.value for s in samples if s.name == LATENCY_METRIC and s.label("job_name") == job
              and s.label("quantile") == "0.99" and s.value == s.value]
    return max(values) if values else None
