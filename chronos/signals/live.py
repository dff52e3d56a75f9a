"""Sampling a live job: state and checkpoints from REST, offsets and source counts from the Flink
Prometheus reporter, end offsets from Kafka, latency from a read_committed observer of the output.

REST metric endpoints are not used: after a TaskManager loss they can freeze for minutes.

Each source can be read on its own (`running`, `reporter`, `end_offset`), so a tuner can guard each and
go on without the one that fails. The output observer is a thread that owns its consumer from creation
to close (a consumer is never closed under a poll in flight); if it dies (a broker gone too long), it
says why once and `observer_failure` starts it again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from chronos.bounded_http import BoundedClient
from chronos.clock import wall_ms
from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import ChronosError
from chronos.flink.prometheus_scrape import (
    SCRAPE_DEADLINE_S,
    SOURCE_METRICS,
    PromSample,
    scrape,
    source_offsets,
    source_records_out,
)
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.output import OutputRecord, committed_consumer, committed_records
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.model import CheckpointEvent, CheckpointHistory, SignalSample, describe

# The output observer's idle wait: a poll (and the broker's fetch) returns as soon as committed output is there, so a
# longer wait costs no latency resolution, only how soon a stop is seen; at 200 ms it was most of a tuner's CPU.
OBSERVER_IDLE_MS = 1000
HISTORY = 200_000  # latencies kept for windowed percentiles: a bounded memory for a tuner that runs for weeks


class EndOffsets(Protocol):
    """The input topic's end offsets (TopicEndOffsets; a fake in the unit tests)."""

    def total_end_offset(self) -> int: ...
    def close(self) -> None: ...


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
        wall_ms: Callable[[], int] = wall_ms,
        clock: Callable[[], float] = time.monotonic,
        timestamp_field: str = "max_created_ms",
        consumer_factory: Callable[[str, str], Any] | None = None,
        history_s: float | None = None,
        ends: EndOffsets | None = None,
        owns_client: bool = False,
        more_input_topics: tuple[str, ...] = (),
        scrape_reporter: Callable[[list[str]], list[PromSample]] | None = None,
        kafka: KafkaSecurity = PLAINTEXT,
    ) -> None:
        """`history_s`: how far back `latencies_between` must reach (the tuner: its latency window); older
        latencies are dropped as they age. None keeps up to HISTORY of them (a profiling run's whole life).
        `ends` and `scrape_reporter`: reads shared with other jobs (chronos.signals.shared_reads); default: its own."""
        self._consumer_factory = consumer_factory or (lambda bootstrap, topic: committed_consumer(
            bootstrap, topic, from_beginning=False, idle_fetch_ms=OBSERVER_IDLE_MS, security=kafka))
        self._owns_client = owns_client  # close() closes the REST client too (one made for these signals alone)
        self._client = client
        self.job_id = job_id
        self._job_name = job_name
        self._urls = reporter_urls
        self._wall_ms = wall_ms
        self._clock = clock
        self._timestamp_field = timestamp_field
        self._ends = ends if ends is not None else TopicEndOffsets(bootstrap, input_topic, *more_input_topics,
                                                                   security=kafka)
        self._bootstrap, self._output_topic = bootstrap, output_topic
        self._worst_recent: float | None = None  # since the last worst_recent_latency()
        self._history_ms = None if history_s is None else int(history_s * 1000)
        self._history: deque[tuple[int, float]] = deque(maxlen=HISTORY)  # (visible at, latency): percentiles
        self._newest_created_ms: int | None = None
        self._watching_since_ms = wall_ms()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._observer_error: str | None = None
        self._observer = self._start_observer()
        self._last_count: tuple[float, float] | None = None
        self._http = BoundedClient(deadline_s=SCRAPE_DEADLINE_S)
        self._scrape = scrape_reporter or (lambda urls: scrape(urls, client=self._http, names=SOURCE_METRICS))

    def _start_observer(self) -> threading.Thread:
        thread = threading.Thread(target=self._observe, name="output-observer", daemon=True)
        thread.start()
        return thread

    def _observe(self) -> None:
        """The observer thread: creates, polls and closes its own consumer; a failure ends it, said once."""
        consumer: Any = None
        try:
            consumer = self._consumer_factory(self._bootstrap, self._output_topic)
            for batch in committed_records(consumer, poll_ms=OBSERVER_IDLE_MS, timestamp_field=self._timestamp_field):
                self._take(batch)
                if self._stop.is_set():
                    return
        except Exception as exc:  # noqa: BLE001 - any client error ends this thread, not the tuner
            self._observer_error = describe(exc)
        finally:
            if consumer is not None:
                with contextlib.suppress(Exception):
                    consumer.close()

    def _take(self, batch: list[OutputRecord]) -> None:
        visible = self._wall_ms()
        with self._lock:
            latencies = [float(visible - record.max_created_ms) for record in batch]
            if batch:
                newest = max(record.max_created_ms for record in batch)
                self._newest_created_ms = max(newest, self._newest_created_ms or newest)
            if latencies:
                self._worst_recent = max(max(latencies), self._worst_recent or latencies[0])
            self._history.extend((visible, latency) for latency in latencies)
            if self._history_ms is not None:
                while self._history and self._history[0][0] < visible - self._history_ms:
                    self._history.popleft()

    def observer_failure(self) -> str | None:
        """Why the output observer stopped, if it did; it is started again (to fail again, and be said
        again, only if the cause is still there)."""
        if self._observer.is_alive() or self._stop.is_set():
            return None
        error = self._observer_error or "the output observer stopped"
        self._observer_error = None
        self._observer = self._start_observer()
        return error

    def close(self) -> None:
        """Stop the observer (it closes its own consumer when its poll returns) and every client."""
        self._stop.set()
        self._observer.join(5)
        self._ends.close()
        self._http.close()
        if self._owns_client:
            self._client.close()

    def follow(self, job_id: str) -> None:
        """Read this job from now on: a retune replaces the job, its topics and reporter stay."""
        self.job_id = job_id

    # -- one source each: the tuner guards every call on its own ----------------------------------------
    def running(self) -> bool:
        """Every task RUNNING (REST); raises ChronosError when the REST API does not answer."""
        return self._client.job(self.job_id).all_running

    def reporter(self) -> list[PromSample]:
        """The source metrics of every reporter endpoint that answers."""
        return self._scrape(self._urls)

    def end_offset(self) -> int:
        """Total end offset of the input topic (Kafka); raises when the broker does not answer in time."""
        return self._ends.total_end_offset()

    def derive(self, samples: list[PromSample], end_offset: int | None) -> tuple[float | None, float | None]:
        """(throughput, lag) from reporter samples and the input's end offset; None where not known."""
        offsets = source_offsets(samples, self._job_name)
        lag = float(end_offset - offsets.current) if offsets is not None and end_offset is not None else None
        throughput = None
        count, now = source_records_out(samples, self._job_name), self._clock()
        if self._last_count is not None and count >= self._last_count[0] and now > self._last_count[1]:
            throughput = (count - self._last_count[0]) / (now - self._last_count[1])
        self._last_count = (count, now)
        return throughput, lag

    def worst_recent_latency(self) -> float | None:
        """The worst latency of the output that became visible since the last call. A window would keep
        a catch-up burst's latencies for its whole length and delay "recovered" by as much."""
        with self._lock:
            worst, self._worst_recent = self._worst_recent, None
        return worst

    def sample(self) -> SignalSample:
        """One sample from every source (chaos measurements, profiling); REST down reads as not running."""
        at = self._wall_ms()
        try:
            running = self.running()
        except ChronosError:
            running = False
        samples = self.reporter()
        end_offset = None
        if source_offsets(samples, self._job_name):
            try:
                end_offset = self.end_offset()
            except ChronosError:  # Kafka did not answer in time: the lag is not known this once
                end_offset = None
        throughput, lag = self.derive(samples, end_offset)
        return SignalSample(at, running, throughput, lag, self.worst_recent_latency())

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

    def failed_since(self, since_ms: int) -> int | None:
        """From the job's exception history; None also while REST does not answer (a sample says it is down)."""
        try:
            entries = self._client.exceptions(self.job_id).exception_history.entries
        except ChronosError:
            return None
        return min((e.timestamp for e in entries if e.timestamp >= since_ms), default=None)
