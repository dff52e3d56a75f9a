"""The tuner's collector for a job on a Flink cluster with Kafka input and output: one LiveReading per
call, each source read on its own so one that fails (a REST metric after a TaskManager loss, a
broker restart) leaves its field None instead of costing the whole reading."""

from __future__ import annotations

import time
from collections.abc import Callable

from chronos.errors import ChronosError
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.signals.latency_sources import LatencySource, OutputTimestamps
from chronos.signals.live import LiveSignals
from chronos.tune.readings import LiveReading


class KafkaJobCollector:
    def __init__(self, signals: LiveSignals, client: FlinkRestClient, bootstrap: str, input_topic: str,
                 latency_window_s: float, latency: LatencySource | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._signals = signals
        self._latency: LatencySource = latency or OutputTimestamps(signals)
        self._client = client
        self._ends = TopicEndOffsets(bootstrap, input_topic)
        self._window_ms = int(latency_window_s * 1000)
        self._clock = clock
        self._last_end: tuple[int, float] | None = None
        self._last_at_ms: int | None = None
        self._job: tuple[str, int] | None = None  # (job id, first collected at): a new job's latency starts afresh

    def close(self) -> None:
        self._ends.close()
        self._signals.close()

    def collect(self, job_id: str) -> LiveReading:
        self._signals.job_id = job_id
        sample = self._signals.sample()
        if self._job is None or self._job[0] != job_id:
            self._job = (job_id, sample.at_ms)
        rate = None
        try:
            end, now = self._ends.total_end_offset(), self._clock()
            if self._last_end is not None and now > self._last_end[1] and end >= self._last_end[0]:
                rate = (end - self._last_end[0]) / (now - self._last_end[1])
            self._last_end = (end, now)
        except Exception:  # noqa: BLE001 - kafka-python raises many types; a missed rate reading is a None
            rate = None
        since = self._last_at_ms if self._last_at_ms is not None else sample.at_ms - self._window_ms
        self._last_at_ms = sample.at_ms
        window_start = max(sample.at_ms - self._window_ms, self._job[1])
        window = self._latency.p99_ms(window_start, sample.at_ms + 1)
        recent = self._latency.p99_ms(since, sample.at_ms + 1)
        return LiveReading(
            at_ms=sample.at_ms, running=sample.running, interval_ms=self._interval(job_id), input_rate=rate,
            throughput=sample.throughput, lag=sample.lag, p99_ms=window, recent_p99_ms=recent,
            checkpoint_costs_s=self._costs(job_id), last_failure_ms=self._last_failure(job_id),
            output_staleness_ms=self._signals.staleness_ms(sample.at_ms),
        )

    def _interval(self, job_id: str) -> int | None:
        try:
            return self._client.checkpoint_config(job_id).interval
        except ChronosError:
            return None

    def _costs(self, job_id: str) -> tuple[float, ...]:
        try:
            history = self._client.checkpoints(job_id).history
        except ChronosError:
            return ()
        return tuple(h.end_to_end_duration / 1000 for h in history if h.status == "COMPLETED" and not h.is_savepoint)[:10]

    def _last_failure(self, job_id: str) -> int | None:
        try:
            entries = self._client.exceptions(job_id).exception_history.entries
        except ChronosError:
            return None
        return max((e.timestamp for e in entries), default=None)
