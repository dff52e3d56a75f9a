"""The collector with sources that fail (fakes of our own wrappers): every failure is a missing value in
a reading that names it, never an exception; a failed source is not asked again until its backoff
delay has passed; it is read again once that has, and its failure is gone when it answers."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chronos.backoff import Backoff, SourceGate
from chronos.errors import FlinkRequestFailed, FlinkUnreachable
from chronos.flink.replies import CheckpointConfigReply, CheckpointStats, ExceptionsReply
from chronos.signals.tune_signals import KafkaJobCollector
from tests.support.clocks import Clock
from tests.support.fake_job_signals import JOB, FakeJobSignals

REPLIES = Path(__file__).resolve().parents[1] / "fixtures" / "flink_replies"


def recorded(name: str) -> dict[str, object]:
    """A reply recorded from Flink 2.3."""
    reply: dict[str, object] = json.loads((REPLIES / name).read_text())
    return reply


Signals = FakeJobSignals


@dataclass
class Rest:
    signals: Signals
    status: int | None = None  # answer every read with this HTTP error

    def _read(self) -> None:
        self.signals._call("flink-rest")
        if self.status:
            raise FlinkRequestFailed(f"Flink refused GET: HTTP {self.status}")

    def checkpoint_config(self, job_id: str) -> CheckpointConfigReply:
        self._read()
        return CheckpointConfigReply.model_validate({**recorded("checkpoints_config.json"), "interval": 10_000})

    def checkpoints(self, job_id: str) -> CheckpointStats:
        self._read()
        return CheckpointStats.model_validate(recorded("checkpoints.json"))

    def exceptions(self, job_id: str) -> ExceptionsReply:
        self._read()
        return ExceptionsReply.model_validate(recorded("exceptions.json"))


class Latency:
    def p99_ms(self, since_ms: int, until_ms: int) -> float | None:
        return 250.0


def collector(signals: Signals, clock: Clock, rest: Rest | None = None) -> KafkaJobCollector:
    return KafkaJobCollector(signals, rest or Rest(signals), 60, Latency(), clock=clock, wall_ms=lambda: int(clock.now * 1000),
                             backoff=Backoff(first_s=2.0, factor=2.0, max_s=60.0, jitter=0.0))


def test_a_healthy_reading_names_no_failure() -> None:
    clock = Clock()
    reading = collector(Signals(), clock).collect(JOB)
    assert reading.failures == () and reading.running and reading.interval_ms == 10_000 and reading.p99_ms == 250


def test_a_kafka_timeout_is_a_missing_rate_not_an_exception_and_waits_out_its_backoff() -> None:
    signals, clock = Signals(), Clock()
    c = collector(signals, clock)
    c.collect(JOB)
    clock.now = 5
    signals.broken.add("kafka")
    reading = c.collect(JOB)
    assert [(f.source, f.attempted) for f in reading.failures] == [("kafka", True)]
    assert "KafkaTimeoutError" in reading.failures[0].error
    assert reading.input_rate is None and reading.lag is None and reading.running and reading.p99_ms == 250
    asked = signals.calls["kafka"]
    clock.now = 6  # within the 2 s delay: not asked, still missing
    assert [(f.source, f.attempted) for f in c.collect(JOB).failures] == [("kafka", False)]
    assert signals.calls["kafka"] == asked
    clock.now = 7.5  # the delay passed: asked again, and (still broken) the next delay is 4 s
    c.collect(JOB)
    assert signals.calls["kafka"] == asked + 1
    clock.now = 10
    c.collect(JOB)
    assert signals.calls["kafka"] == asked + 1
    signals.broken.clear()
    clock.now = 12
    back = c.collect(JOB)
    assert back.failures == () and signals.calls["kafka"] == asked + 2


def test_a_rest_outage_costs_one_call_per_reading_and_reads_as_unknown_not_as_stopped() -> None:
    signals, clock = Signals(broken={"flink-rest"}), Clock()
    reading = collector(signals, clock).collect(JOB)
    assert signals.calls["flink-rest"] == 1, "after the first timeout, the other REST reads are skipped"
    assert reading.missing(("flink-rest",)) == ("flink-rest",)
    assert reading.interval_ms is None and reading.checkpoint_costs_s == () and reading.last_failure_ms is None
    assert not reading.running


@dataclass
class SlowRest(Rest):
    """A REST API that is paused: every read waits out the client's 10 s timeout before it fails."""

    clock: Clock = field(default_factory=Clock)

    def _read(self) -> None:
        self.signals._call("flink-rest")
        self.clock.now += 10
        raise FlinkUnreachable("cannot reach the Flink REST API at http://jm:8081 (ReadTimeout)")


def test_a_read_that_times_out_closes_its_gate_from_when_it_failed_not_from_when_it_began() -> None:
    signals, clock = Signals(), Clock()
    c = collector(signals, clock, SlowRest(signals, clock=clock))
    c.collect(JOB)
    assert signals.calls["flink-rest"] == 2, "one timed-out read; the reads after it in the step are skipped"


def test_a_rest_500_and_a_broken_reporter_each_leave_only_their_own_fields_missing() -> None:
    signals, clock = Signals(broken={"reporter"}), Clock()
    reading = collector(signals, clock, Rest(signals, status=500)).collect(JOB)
    assert sorted(f.source for f in reading.failures) == ["flink-rest", "reporter"]
    assert reading.running, "the job's state came from its own call, before the 500s"
    assert reading.input_rate is None and reading.p99_ms == 250  # the first end offset has no rate yet


def test_a_dead_output_observer_is_said_as_a_latency_failure() -> None:
    signals, clock = Signals(observer_died="KafkaConnectionError: 111 ECONNREFUSED"), Clock()
    reading = collector(signals, clock).collect(JOB)
    assert [f.source for f in reading.failures] == ["latency"] and "ECONNREFUSED" in reading.failures[0].error


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_backoff_delays_grow_and_are_bounded(seed: int) -> None:
    backoff, rng = Backoff(first_s=1.0, factor=2.0, max_s=30.0, jitter=0.5), random.Random(seed)
    bases = [backoff.base(n) for n in range(1, 10)]
    assert bases == [1, 2, 4, 8, 16, 30, 30, 30, 30]
    delays = [backoff.delay(n, rng) for n in range(1, 10)]
    assert all(0.5 * b <= d <= b for b, d in zip(bases, delays, strict=True))


def test_a_gate_closes_after_a_failure_and_opens_after_its_delay() -> None:
    gate = SourceGate(Backoff(first_s=2.0, factor=3.0, max_s=10.0, jitter=0.0), random.Random(0))
    assert gate.open(0.0)
    assert gate.failed(0.0, "x") == 2.0 and not gate.open(1.9) and gate.open(2.0)
    assert gate.failed(2.0, "y") == 6.0 and gate.last_error == "y"
    assert gate.failed(8.0, "z") == 10.0, "capped"
    gate.passed()
    assert gate.open(8.1) and gate.failures == 0


def test_a_paced_jobs_reading_carries_the_cadence_it_checkpoints_at_and_flinks_interval_otherwise() -> None:
    clock = Clock()
    cadence: list[int | None] = [None]
    signals = Signals()
    c = KafkaJobCollector(signals, Rest(signals), 60, Latency(), clock=clock, wall_ms=lambda: int(clock.now * 1000),
                          cadence_ms=lambda: cadence[0])
    assert c.collect(JOB).interval_ms == 10_000, "not paced: Flink's configured interval"
    cadence[0] = 3000
    assert c.collect(JOB).interval_ms == 3000, "paced: the cadence (Flink's interval is only the fallback)"
    broken = KafkaJobCollector(signals, Rest(signals, status=500), 60, Latency(), clock=clock,
                               wall_ms=lambda: int(clock.now * 1000), cadence_ms=lambda: cadence[0])
    assert broken.collect(JOB).interval_ms is None, "Flink unread: the job's state is unknown, paced or not"
