"""A job's signals as the tuner's collector reads them (`chronos.signals.tune_signals.JobSignals`), one source per
call, each of which can be broken. Held to the same contract as the real `LiveSignals` on the local stack
(tests/contracts/test_job_signals_contract.py): throughput unknown until a second reading, the input's end offset
growing while input is sent, a job the cluster does not know refused."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.errors import FlinkRequestFailed, FlinkUnreachable
from chronos.flink.prometheus_scrape import PromSample
from tests.support.clocks import Clock

JOB = "0123456789abcdef0123456789abcdef"


class KafkaTimeoutError(Exception):
    """kafka-python's name for it; the collector must not care which type a source raises."""


@dataclass
class FakeJobSignals:
    job_id: str = JOB
    clock: Clock = field(default_factory=Clock)  # the input grows with it
    rate: float = 1000.0  # records/s sent to the input
    lag: float = 10.0  # records behind the input's end
    jobs: set[str] = field(default_factory=lambda: {JOB})  # what the cluster runs
    broken: set[str] = field(default_factory=set)  # which sources raise
    calls: dict[str, int] = field(default_factory=dict)
    observer_died: str | None = None
    end: int = 0  # the input's end offset last read
    _last: tuple[float, float] | None = None  # (records the source emitted, when) at the previous derive

    def _call(self, source: str) -> None:
        self.calls[source] = self.calls.get(source, 0) + 1
        if source == "kafka" and "kafka" in self.broken:
            raise KafkaTimeoutError("Failed to get offsets by times in 5000 ms")
        if source == "flink-rest" and "flink-rest" in self.broken:
            raise FlinkUnreachable("cannot reach the Flink REST API at http://jm:8081 (ConnectTimeout)")
        if source == "reporter" and "reporter" in self.broken:
            raise ValueError("not the exposition format")

    def wait(self, seconds: float) -> None:
        self.clock.now += seconds

    def follow(self, job_id: str) -> None:
        self.job_id = job_id

    def running(self) -> bool:
        self._call("flink-rest")
        if self.job_id not in self.jobs:
            raise FlinkRequestFailed(f"Flink refused GET /jobs/{self.job_id}: HTTP 404")
        return True

    def reporter(self) -> list[PromSample]:
        self._call("reporter")
        return []

    def end_offset(self) -> int:
        self._call("kafka")
        self.end = max(self.end, round(self.rate * self.clock.now))
        return self.end

    def derive(self, samples: list[PromSample], end_offset: int | None) -> tuple[float | None, float | None]:
        emitted, now = max(0.0, self.rate * self.clock.now - self.lag), self.clock.now
        throughput = None
        if self._last is not None and emitted >= self._last[0] and now > self._last[1]:
            throughput = (emitted - self._last[0]) / (now - self._last[1])
        self._last = (emitted, now)
        return throughput, None if end_offset is None else self.lag

    def observer_failure(self) -> str | None:
        died, self.observer_died = self.observer_died, None
        return died

    def staleness_ms(self, now_ms: int) -> float:
        return 100.0

    def close(self) -> None:
        return None
