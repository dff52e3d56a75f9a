"""Sampling a live job: state and checkpoints from REST, offsets and source counts from the Flink
Prometheus reporter, end offsets from Kafka, latency from a read_committed observer of the output.

REST metric endpoints are not used: after a TaskManager loss they can freeze for minutes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from chronos.errors import ChronosError
from chronos.flink.prometheus_scrape import SOURCE_METRICS, scrape, source_offsets, source_records_out
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.output import committed_consumer, committed_records
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.model import CheckpointEvent, CheckpointHistory, SignalSample


class LiveSignals:
    def __init__(
        self,
        client: FlinkRestClient,
        job_id: str,
        job_name: str,
        bootstrap: str,
        input_topic: str,
        output_topic: str,
        reporter_urls: list[str],
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        clock: Callable[[], float] = time.monotonic,
        timestamp_field: str = "max_created_ms",
    ) -> None:
        self._client = client
        self.job_id = job_id
        self._job_name = job_name
        self._urls = reporter_urls
        self._wall_ms = wall_ms
        self._clock = clock
        self._timestamp_field = timestamp_field
        self._ends = TopicEndOffsets(bootstrap, input_topic)
        self._latencies: list[float] = []
        self._history: list[tuple[int, float]] = []  # (visible at, latency) for percentiles over a window
        self._newest_created_ms: int | None = None
        self._watching_since_ms = wall_ms()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer: Any = committed_consumer(bootstrap, output_topic, from_beginning=False)
        self._observer = threading.Thread(target=self._observe, daemon=True)
        self._observer.start()
        self._last_count: tuple[float, float] | None = None
        self._http = httpx.Client(timeout=3.0)

    def _observe(self) -> None:
        for batch in committed_records(self._consumer, poll_ms=200, timestamp_field=self._timestamp_field):
            visible = self._wall_ms()
            with self._lock:
                latencies = [float(visible - record.max_created_ms) for record in batch]
                if batch:
                    newest = max(record.max_created_ms for record in batch)
                    self._newest_created_ms = max(newest, self._newest_created_ms or newest)
                self._latencies.extend(latencies)
                self._history.extend((visible, latency) for latency in latencies)
                if len(self._history) > 200_000:
                    del self._history[:100_000]
            if self._stop.is_set():
                return

    def close(self) -> None:
        self._stop.set()
        self._observer.join(5)
        self._consumer.close()
        self._ends.close()
        self._http.close()

    def sample(self) -> SignalSample:
        at = self._wall_ms()
        try:
            running = self._client.job(self.job_id).all_running
        except ChronosError:
            running = False
        samples = scrape(self._urls, client=self._http, names=SOURCE_METRICS)
        offsets = source_offsets(samples, self._job_name)
        lag = None
        if offsets is not None:
            lag = float(self._ends.total_end_offset() - offsets.current)
        throughput = None
        count, now = source_records_out(samples, self._job_name), self._clock()
        if self._last_count is not None and count >= self._last_count[0] and now > self._last_count[1]:
            throughput = (count - self._last_count[0]) / (now - self._last_count[1])
        self._last_count = (count, now)
        with self._lock:
            # The worst latency of the output that became visible since the last sample. A window would
            # keep a catch-up burst's latencies for its whole length and delay "recovered" by as much.
            worst = max(self._latencies) if self._latencies else None
            self._latencies.clear()
        return SignalSample(at, running, throughput, lag, worst)

    def staleness_ms(self, now_ms: int) -> float:
        """How far the visible output is behind now: the age of the newest input it covers. Before any output
        shows, at least as long as it has been watched (a job at a long interval may show none for a minute)."""
        with self._lock:
            return float(now_ms - (self._newest_created_ms or self._watching_since_ms))

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]:
        """End-to-end latencies (ms) of the committed output that became visible in [since, until)."""
        with self._lock:
            return [latency for at, latency in self._history if since_ms <= at < until_ms]

    def checkpoint_history(self) -> CheckpointHistory:
        stats = self._client.checkpoints(self.job_id)
        events = sorted(
            (CheckpointEvent(h.id, h.trigger_timestamp, h.latest_ack_timestamp, h.end_to_end_duration, h.state_size)
             for h in stats.history if h.status == "COMPLETED"),
            key=lambda e: e.trigger_ms,
        )
        return CheckpointHistory(self._client.checkpoint_config(self.job_id).interval, tuple(events))

    def replay_now(self) -> int | None:
        """Records a fault now would replay (read since the last completed checkpoint)."""
        offsets = source_offsets(scrape(self._urls, client=self._http, names=SOURCE_METRICS), self._job_name)
        return offsets.replay if offsets else None

    def restored_checkpoint_id(self) -> int | None:
        restored = self._client.checkpoints(self.job_id).latest.restored
        return restored.id if restored else None
