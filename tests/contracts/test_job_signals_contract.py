"""One set of assertions about `JobSignals` (what the tuner's collector reads of a job, one source per call), held by
the fake the collector's unit tests run against and by the two real ones on the local stack (`LiveSignals`, which
reads the job's topics; `FlinkMetricSignals`, which reads only Flink's metrics, for a job with no job file), so the
fake cannot drift from Flink and Kafka: a running job reads running, and a job the cluster does not know raises a ChronosError
(the collector's guard makes it a missing reading); the input's end offset grows while input is sent; throughput is
unknown on the first derive (nothing to take a difference from) and a rate after; lag is unknown without an end
offset; the output's staleness is never negative (unknown where the output is); a healthy observer reports no
failure."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from chronos.errors import ChronosError
from chronos.signals.tune_signals import JobSignals
from tests.support.fake_job_signals import JOB, FakeJobSignals

UNKNOWN_JOB = "f" * 32


@dataclass
class Subject:
    signals: JobSignals
    job_id: str  # a job RUNNING with every task, its input fed while the test runs
    wait: Callable[[float], None]  # let this much time pass (the fake's clock, or the real one)
    now_ms: Callable[[], int]  # the wall clock the signals' timestamps are on


@pytest.fixture(params=["fake", "flink", "flink-metrics"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "fake":
        fake = FakeJobSignals()
        yield Subject(fake, JOB, fake.wait, lambda: int(fake.clock.now * 1000))
        return
    from chronos.signals.flink_metrics import FlinkMetricSignals
    from chronos.signals.live import LiveSignals
    from tests.conftest import BackgroundLoad, wait_until

    demo_job = request.getfixturevalue("demo_job")
    job_id = demo_job.submit(2000)
    s = demo_job.settings
    load = BackgroundLoad(demo_job.stack.bootstrap, s.input_topic, 200, duration_s=120)
    signals: JobSignals = LiveSignals(demo_job.flink, job_id, s.name, demo_job.stack.bootstrap, s.input_topic,
                                      s.output_topic, demo_job.stack.prometheus_urls) if request.param == "flink" else \
        FlinkMetricSignals(demo_job.flink, job_id, s.name, demo_job.stack.prometheus_urls)
    try:
        if request.param == "flink-metrics":  # a source's offsets are metrics once it has read: a job that has
            wait_until(lambda: _reports(signals), 60, 1, what="the Kafka source's offsets on Flink's reporter")
        yield Subject(signals, job_id, time.sleep, lambda: int(time.time() * 1000))
    finally:
        signals.close()
        load.halt()


def _reports(signals: JobSignals) -> bool:
    try:
        signals.reporter()
        signals.end_offset()
    except ChronosError:
        return False
    return True


def test_a_running_job_reads_running_and_one_the_cluster_does_not_know_raises(subject: Subject) -> None:
    assert subject.signals.running()
    subject.signals.follow(UNKNOWN_JOB)
    with pytest.raises(ChronosError):
        subject.signals.running()
    subject.signals.follow(subject.job_id)
    assert subject.signals.running(), "following the job again reads it again"


def test_the_inputs_end_offset_grows_while_input_is_sent(subject: Subject) -> None:
    first = subject.signals.end_offset()
    subject.wait(3)
    assert subject.signals.end_offset() > first >= 0


def test_throughput_is_unknown_on_the_first_derive_and_a_rate_after(subject: Subject) -> None:
    signals = subject.signals
    throughput, _ = signals.derive(signals.reporter(), signals.end_offset())
    assert throughput is None, "one reading: nothing to take a difference from"
    subject.wait(2)
    throughput, lag = signals.derive(signals.reporter(), signals.end_offset())
    assert throughput is not None and throughput >= 0
    assert lag is None or lag >= 0
    assert signals.derive(signals.reporter(), None)[1] is None, "no end offset, no lag"


def test_the_outputs_staleness_is_never_negative_and_a_healthy_observer_reports_nothing(subject: Subject) -> None:
    staleness = subject.signals.staleness_ms(subject.now_ms())
    assert staleness is None or staleness >= 0
    assert subject.signals.observer_failure() is None
