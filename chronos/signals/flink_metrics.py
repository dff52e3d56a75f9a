"""A job's signals from Flink alone, for a job chronos has no job file of: state from REST; input position, backlog
and source throughput from its Kafka source's metrics, on the Prometheus reporter (or on the REST API where no
reporter is known: `rest_source_samples`).

Without a job file chronos knows neither the job's topics nor its broker, so it cannot read the input topics' end
offsets as `chronos.signals.live.LiveSignals` does. The Kafka source says as much itself: each partition's
`currentOffset` (the position it has read to) and each reader's `pendingRecords` (FLIP-33's standard source metric:
records in its partitions not yet fetched, the consumer's records-lag). Their sum is how far the input reaches:
the end offset, whose growth is the input rate and whose distance to the position is the lag. The output is not
known either, so there is no end-to-end latency here and no output staleness (a latency source of the job's own,
Flink's latency markers, is `chronos.signals.latency_sources.FlinkLatencyMarkers`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from chronos.bounded_http import BoundedClient
from chronos.errors import ChronosError
from chronos.flink.prometheus_scrape import (
    CURRENT_OFFSET,
    RECORDS_OUT,
    SCRAPE_DEADLINE_S,
    SOURCE_METRICS,
    PromSample,
    label_value,
    scrape,
    source_offsets,
    source_records_out,
)
from chronos.flink.replies import JobDetail, Metric

PENDING_RECORDS = "flink_taskmanager_job_task_operator_pendingRecords"
FRESH_S = 1.0  # a reporter reading this recent is the one `end_offset` uses
FLINK_SOURCE_METRICS = (*SOURCE_METRICS, PENDING_RECORDS + "{")

# A source operator's metric on the REST API, per subtask: `0.Source__orders.numRecordsOut`,
# `1.Source__orders.pendingRecords`, `0.Source__orders.KafkaSourceReader.topic.orders.partition.0.currentOffset`.
_REST_ID = re.compile(r"^(?P<subtask>\d+)\.(?P<operator>Source__[^.]*)\.(?:(?P<name>numRecordsOut|pendingRecords)|"
                      r"KafkaSourceReader\.topic\.(?P<topic>.+)\.partition\.(?P<partition>\d+)\.currentOffset)$")
_AS_REPORTED = {"numRecordsOut": RECORDS_OUT, "pendingRecords": PENDING_RECORDS}


class VertexMetrics(Protocol):
    """The REST reads of a job's source operators' metrics (FlinkRestClient)."""

    def job(self, job_id: str) -> JobDetail: ...
    def vertex_metric_ids(self, job_id: str, vertex_id: str) -> tuple[str, ...]: ...
    def vertex_metrics(self, job_id: str, vertex_id: str, names: Sequence[str]) -> tuple[Metric, ...]: ...


def rest_source_samples(client: VertexMetrics, job_id: str, job_name: str) -> list[PromSample]:
    """The same source metrics from Flink's REST API, as the reporter would name them: for a cluster whose reporter
    chronos cannot reach. REST's values are only as fresh as the JobManager's metric fetcher (its
    metrics.fetcher.update-interval) and can go stale after a TaskManager loss, so the reporter is read where known."""
    samples = []
    job = label_value(job_name)
    for vertex in client.job(job_id).vertices:
        if not vertex.is_source:
            continue
        wanted = [m for m in client.vertex_metric_ids(job_id, vertex.id) if _REST_ID.match(m)]
        for metric in client.vertex_metrics(job_id, vertex.id, wanted):
            found, value = _REST_ID.match(metric.id), metric.number
            if found is None or value is None:
                continue
            labels = {"job_name": job, "operator_name": found["operator"], "subtask_index": found["subtask"]}
            if found["name"]:
                samples.append(PromSample(_AS_REPORTED[found["name"]], tuple(sorted(labels.items())), value))
            else:
                labels |= {"topic": found["topic"], "partition": found["partition"]}
                samples.append(PromSample(CURRENT_OFFSET, tuple(sorted(labels.items())), value))
    return samples


def pending_records(samples: list[PromSample], job_name: str) -> float | None:
    """The job's sources' unfetched records, summed over their readers; None when no reader reports them."""
    job = label_value(job_name)
    values = [s.value for s in samples if s.name == PENDING_RECORDS and s.label("job_name") == job and s.value >= 0]
    return sum(values) if values else None


class JobStates(Protocol):
    """The job's state (FlinkRestClient)."""

    def job(self, job_id: str) -> JobDetail: ...


class FlinkMetricSignals:
    """`chronos.signals.tune_signals.JobSignals` read from Flink's REST API and Prometheus reporter alone."""

    def __init__(self, client: JobStates, job_id: str, job_name: str, reporter_urls: list[str],
                 clock: Callable[[], float] = time.monotonic,
                 read_samples: Callable[[], list[PromSample]] | None = None) -> None:
        """`read_samples`: the reporter's source metrics (default: scraped from `reporter_urls`)."""
        self._client = client
        self.job_id = job_id
        self._job_name = job_name
        self._clock = clock
        self._http = BoundedClient(deadline_s=SCRAPE_DEADLINE_S)
        self._read_samples = read_samples or (lambda: scrape(reporter_urls, client=self._http,
                                                             names=FLINK_SOURCE_METRICS))
        self._last: tuple[float, list[PromSample]] | None = None  # (clock, samples) of the last reading
        self._last_count: tuple[float, float] | None = None

    def follow(self, job_id: str) -> None:
        self.job_id = job_id

    def running(self) -> bool:
        return self._client.job(self.job_id).all_running

    def reporter(self) -> list[PromSample]:
        samples = self._read_samples()
        self._last = (self._clock(), samples)
        return samples

    def end_offset(self) -> int:
        """How far the input reaches (summed over partitions): from the reporter reading the collector just took
        (a reporter page is thousands of lines; one reading serves both), else from a reading of its own."""
        samples = self._last[1] if self._last is not None and self._clock() - self._last[0] < FRESH_S else \
            self.reporter()
        offsets, pending = source_offsets(samples, self._job_name), pending_records(samples, self._job_name)
        if offsets is None or pending is None:
            missing = "currentOffset" if offsets is None else "pendingRecords"
            raise ChronosError(f"Flink's reporter shows no Kafka source {missing} of job {self._job_name}")
        return offsets.current + int(pending)

    def derive(self, samples: list[PromSample], end_offset: int | None) -> tuple[float | None, float | None]:
        """(source throughput, lag): records out of the sources per second since the last call, and the records
        pending in their partitions (known, like every JobSignals' lag, only with the end offset it is part of)."""
        throughput = None
        count, now = source_records_out(samples, self._job_name), self._clock()
        if self._last_count is not None and count >= self._last_count[0] and now > self._last_count[1]:
            throughput = (count - self._last_count[0]) / (now - self._last_count[1])
        self._last_count = (count, now)
        return throughput, None if end_offset is None else pending_records(samples, self._job_name)

    def observer_failure(self) -> str | None:
        return None  # no output is observed

    def staleness_ms(self, now_ms: int) -> float | None:
        return None  # the output is not known

    def close(self) -> None:
        self._http.close()


class NoLatency:
    """The latency source of a job whose latency chronos cannot read: never a reading."""

    def p99_ms(self, since_ms: int, until_ms: int) -> float | None:
        return None
