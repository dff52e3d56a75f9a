"""A job chronos has no job file of is read from its Kafka source's own metrics: how far its input reaches (the
partitions' positions plus the records pending in them), its backlog, and its sources' throughput."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chronos.errors import ChronosError
from chronos.flink.prometheus_scrape import CURRENT_OFFSET, RECORDS_OUT, PromSample
from chronos.flink.replies import JobDetail, Metric
from chronos.signals.flink_metrics import PENDING_RECORDS, FlinkMetricSignals, pending_records, rest_source_samples

JOB = "orders enrichment"  # the reporter spells it orders_enrichment


def sample(name: str, value: float, **labels: str) -> PromSample:
    return PromSample(name, tuple(sorted({"job_name": "orders_enrichment", **labels}.items())), value)


def readings(position: tuple[float, float], pending: tuple[float, float], out: float) -> list[PromSample]:
    return [sample(CURRENT_OFFSET, position[0], topic="orders", partition="0"),
            sample(CURRENT_OFFSET, position[1], topic="orders", partition="1"),
            sample(PENDING_RECORDS, pending[0], subtask_index="0"), sample(PENDING_RECORDS, pending[1], subtask_index="1"),
            sample(RECORDS_OUT, out, operator_name="Source: orders", subtask_index="0"),
            sample(PENDING_RECORDS, 999, subtask_index="0", job_name="another job")]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_end_offset_is_the_position_plus_the_pending_records_and_the_lag_is_what_is_pending() -> None:
    clock, scraped = Clock(), [readings((1000, 2000), (30, 20), 3000)]
    signals = FlinkMetricSignals(None, "a" * 32, JOB, [], clock, read_samples=lambda: scraped[-1])  # type: ignore[arg-type]
    first = signals.reporter()
    assert signals.end_offset() == 3050
    assert signals.derive(first, 3050) == (None, 50)  # a throughput needs two readings
    clock.now, scraped[0] = 0.5, readings((1400, 2400), (10, 10), 3800)
    assert signals.end_offset() == 3050, "the collector's reading of a moment ago serves, no second scrape"
    clock.now = 2.0
    assert signals.end_offset() == 3820, "an older one is read anew"
    assert signals.derive(signals.reporter(), 3820) == (400.0, 20)
    assert signals.derive(signals.reporter(), None)[1] is None, "no end offset, no lag (as every JobSignals)"
    assert signals.staleness_ms(0) is None and signals.observer_failure() is None


def test_a_source_that_reports_no_pending_records_has_no_end_offset_and_says_which_metric_is_missing() -> None:
    without = [s for s in readings((1, 2), (0, 0), 3) if s.name != PENDING_RECORDS]
    signals = FlinkMetricSignals(None, "a" * 32, JOB, [], read_samples=lambda: without)  # type: ignore[arg-type]
    signals.reporter()
    with pytest.raises(ChronosError, match="no Kafka source pendingRecords of job orders enrichment"):
        signals.end_offset()
    assert pending_records(without, JOB) is None


class RestApi:
    """Flink's REST replies for a job with one Kafka source of two subtasks (and a sink whose metrics are not read)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def job(self, job_id: str) -> JobDetail:
        return JobDetail.model_validate({"jid": job_id, "name": JOB, "state": "RUNNING", "start-time": 1, "now": 2,
                                         "vertices": [
                                             {"id": "a" * 32, "name": "Source: orders", "parallelism": 2,
                                              "status": "RUNNING"},
                                             {"id": "b" * 32, "name": "Sink: out", "parallelism": 2,
                                              "status": "RUNNING"}]})

    def vertex_metric_ids(self, job_id: str, vertex_id: str) -> tuple[str, ...]:
        return ("0.Source__orders.numRecordsOut", "0.Source__orders.numRecordsOutPerSecond",
                "0.Source__orders.pendingRecords", "1.Source__orders.pendingRecords",
                "0.Source__orders.KafkaSourceReader.topic.orders.partition.0.currentOffset",
                "1.Source__orders.KafkaSourceReader.topic.orders.partition.1.currentOffset",
                "0.Source__orders.KafkaSourceReader.topic.orders.partition.0.committedOffset")

    def vertex_metrics(self, job_id: str, vertex_id: str, names: Sequence[str]) -> tuple[Metric, ...]:
        self.asked.append((vertex_id, tuple(names)))
        values = {"0.Source__orders.numRecordsOut": "3000", "0.Source__orders.pendingRecords": "30",
                  "1.Source__orders.pendingRecords": "20",
                  "0.Source__orders.KafkaSourceReader.topic.orders.partition.0.currentOffset": "1000",
                  "1.Source__orders.KafkaSourceReader.topic.orders.partition.1.currentOffset": "2000"}
        return tuple(Metric(id=n, value=values.get(n)) for n in names)


def test_without_a_reporter_the_same_metrics_come_from_the_rest_api() -> None:
    api = RestApi()
    samples = rest_source_samples(api, "c" * 32, JOB)
    assert [v for v, _ in api.asked] == ["a" * 32], "only the source's metrics are read"
    assert "0.Source__orders.numRecordsOutPerSecond" not in api.asked[0][1]
    signals = FlinkMetricSignals(api, "c" * 32, JOB, [], read_samples=lambda: samples)
    first = signals.reporter()
    assert signals.end_offset() == 3050 and signals.derive(first, 3050)[1] == 50
