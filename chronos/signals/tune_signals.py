"""The tuner's collector for a job on a Flink cluster with Kafka input and output: one LiveReading per
call, whatever fails.

Each source is read on its own, behind a gate: a source that fails leaves its fields None and is named
in the reading's `failures` (counted and said by the loop, once per outage), and is not asked again
until its backoff delay has passed, so a dead REST API or broker costs one timeout per delay instead of
one per call and per step. Nothing a source raises reaches the loop.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol, TypeVar

from chronos.backoff import Backoff, SourceGate
from chronos.clock import wall_ms
from chronos.flink.prometheus_scrape import PromSample
from chronos.flink.replies import CheckpointConfigReply, CheckpointStats, ExceptionsReply
from chronos.model import SOURCES, SourceFailure, describe
from chronos.signals.latency_sources import LatencySource, OutputTimestamps
from chronos.signals.live import LiveSignals
from chronos.tune.readings import LiveReading

T = TypeVar("T")
SOURCE_BACKOFF = Backoff(first_s=2.0, factor=2.0, max_s=60.0)
# The input rate is the end offsets' growth over at least this long, not over one collect period: on a busy two-core
# host end offsets read 2 s apart swung 9-41k ev/s around a steady 16k ev/s generator (the producer sends in
# batches, the broker answers late), and the highest of those readings became the fallback's ceiling rate, past the
# job's capacity, where every interval misses the recovery target: two fallback restarts in one busy arm.
RATE_WINDOW_S = 10.0


class JobSignals(Protocol):
    """What the collector reads of a job, one source per call (LiveSignals; a fake in the unit tests)."""

    def follow(self, job_id: str) -> None:
        """Read this job from now on (a retune replaces the job; its topics and reporter stay)."""
        ...

    def running(self) -> bool: ...
    def reporter(self) -> list[PromSample]: ...
    def end_offset(self) -> int: ...
    def derive(self, samples: list[PromSample], end_offset: int | None) -> tuple[float | None, float | None]: ...
    def observer_failure(self) -> str | None: ...
    def staleness_ms(self, now_ms: int) -> float | None: ...
    def close(self) -> None: ...


class CheckpointReads(Protocol):
    """The REST reads besides the job's state (FlinkRestClient)."""

    def checkpoint_config(self, job_id: str) -> CheckpointConfigReply: ...
    def checkpoints(self, job_id: str) -> CheckpointStats: ...
    def exceptions(self, job_id: str) -> ExceptionsReply: ...


class KafkaJobCollector:
    def __init__(self, signals: JobSignals, client: CheckpointReads, latency_window_s: float,
                 latency: LatencySource | None = None, clock: Callable[[], float] = time.monotonic,
                 wall_ms: Callable[[], int] = wall_ms, seed: int = 0,
                 backoff: Backoff = SOURCE_BACKOFF, rate_window_s: float = RATE_WINDOW_S,
                 cadence_ms: Callable[[], int | None] = lambda: None) -> None:
        """`cadence_ms`: the cadence chronos paces the job at now (the pacer's; None: not paced). A paced job
        checkpoints at that cadence, Flink's configured interval being only its fallback, so the reading's interval is
        the cadence: what a failure replays and a steady window's latency was measured at."""
        self._cadence_ms = cadence_ms
        self._signals = signals
        if latency is None:
            assert isinstance(signals, LiveSignals), "the output's own timestamps need the live observer"
            latency = OutputTimestamps(signals)
        self._latency: LatencySource = latency
        self._client = client
        self._window_ms = int(latency_window_s * 1000)
        self._clock = clock
        self._wall_ms = wall_ms
        rng = random.Random(seed)
        self._gates = {source: SourceGate(backoff, rng) for source in SOURCES}
        self._ends: deque[tuple[int, float]] = deque()  # (end offset, clock): the rate window's readings
        self._rate_window_s = rate_window_s
        self._last_at_ms: int | None = None
        self._job: tuple[str, int] | None = None  # (job id, first collected at): a new job's latency starts afresh

    def close(self) -> None:
        self._signals.close()

    def _read(self, source: str, read: Callable[[], T], failures: list[SourceFailure]) -> T | None:
        """`read()` unless the source is backing off; a failure is recorded, never raised."""
        gate, now = self._gates[source], self._clock()
        if not gate.open(now):
            if not any(f.source == source for f in failures):
                failures.append(SourceFailure(source, gate.last_error, attempted=False))
            return None
        try:
            value = read()
        except Exception as exc:  # noqa: BLE001 - kafka-python, httpx and Flink raise many types; each is a missing value
            # The delay runs from when the failure was seen: a read that timed out after 10 s must not find its
            # gate already open again for the next read of the same source in this step.
            gate.failed(self._clock(), describe(exc))
            failures.append(SourceFailure(source, describe(exc)))
            return None
        gate.passed()
        return value

    def _rate(self, end: int, now: float) -> float | None:
        """Events/s over the window: from the latest reading at least the window old (or the oldest there is) to
        now. An end offset that went back (a recreated topic) starts the window afresh."""
        if self._ends and end < self._ends[-1][0]:
            self._ends.clear()
        while len(self._ends) > 1 and now - self._ends[1][1] >= self._rate_window_s:
            self._ends.popleft()
        rate = None
        if self._ends and now > self._ends[0][1]:
            rate = (end - self._ends[0][0]) / (now - self._ends[0][1])
        self._ends.append((end, now))
        return rate

    def collect(self, job_id: str) -> LiveReading:
        self._signals.follow(job_id)
        at = self._wall_ms()
        failures: list[SourceFailure] = []
        observer_error = self._signals.observer_failure()
        if observer_error is not None:
            failures.append(SourceFailure("latency", f"output observer: {observer_error}"))
        running = self._read("flink-rest", self._signals.running, failures)
        samples: list[PromSample] = self._read("reporter", self._signals.reporter, failures) or []
        end = self._read("kafka", self._signals.end_offset, failures)
        throughput, lag = self._signals.derive(samples, end)
        if self._job is None or self._job[0] != job_id:
            self._job = (job_id, at)
        rate = None
        now = self._clock()
        if end is not None:
            rate = self._rate(end, now)
        since = self._last_at_ms if self._last_at_ms is not None else at - self._window_ms
        self._last_at_ms = at
        window_start = max(at - self._window_ms, self._job[1])
        interval = self._read("flink-rest", lambda: self._client.checkpoint_config(job_id).interval, failures)
        if interval is not None:
            interval = self._cadence_ms() or interval
        history = self._read("flink-rest", lambda: self._client.checkpoints(job_id).history, failures) or ()
        entries = self._read("flink-rest", lambda: self._client.exceptions(job_id).exception_history.entries,
                             failures) or ()
        return LiveReading(
            at_ms=at, running=bool(running), interval_ms=interval, input_rate=rate, throughput=throughput, lag=lag,
            p99_ms=self._read("latency", lambda: self._latency.p99_ms(window_start, at + 1), failures),
            recent_p99_ms=self._read("latency", lambda: self._latency.p99_ms(since, at + 1), failures),
            checkpoint_costs_s=tuple(h.end_to_end_duration / 1000 for h in history
                                     if h.status == "COMPLETED" and not h.is_savepoint)[:10],
            last_failure_ms=max((e.timestamp for e in entries), default=None),
            output_staleness_ms=self._signals.staleness_ms(at), failures=tuple(failures),
        )
