"""The demo job on the real stack: records flow end to end and checkpoints complete on schedule."""

from __future__ import annotations

import itertools
import statistics
import time

import pytest

from chronos.flink.prometheus_scrape import scrape, source_records_out
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.latency import LatencySnapshot, LatencyWindow
from chronos.jobs.observer import observe
from chronos.jobs.output import committed_consumer
from tests.conftest import BackgroundLoad, DemoJob, wait_until


def test_records_flow_end_to_end_under_load(demo_job: DemoJob, flink: FlinkRestClient) -> None:
    """The load runs until the test ends and the output is observed for 18 s from its first committed record: a
    job whose tasks start slowly beside another worker's load (its first commit waits for every task and a
    checkpoint) is still observed for as long, and the source rate is read while records still flow (0 reads as no
    rate). With a 25 s load and 18 s of observing from submission, one CI run saw no output at all, another no
    source rate within the 30 s after it."""
    job_id = demo_job.submit(interval_ms=2000)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=1000, duration_s=600)
    first_output: list[float] = []

    def seen(snapshot: LatencySnapshot) -> None:
        if snapshot.records and not first_output:
            first_output.append(time.monotonic())

    try:
        consumer = committed_consumer(demo_job.stack.bootstrap, demo_job.settings.output_topic, from_beginning=True)
        try:
            snapshot = observe(consumer, LatencyWindow(30), seen, duration_s=120,
                               should_stop=lambda: bool(first_output) and time.monotonic() - first_output[0] >= 18)
        finally:
            consumer.close()
        assert snapshot.records > 0, "no committed output reached the observer in 120 s"
        assert snapshot.events > 1000
        assert snapshot.p99_ms is not None and 0 < snapshot.p99_ms < 60_000
        rate = wait_until(lambda: flink.source_throughput(job_id), 30, what="a source throughput metric")
        assert rate > 0
        loads = flink.vertex_load(job_id)
        assert len(loads) == len(flink.job(job_id).vertices)
        assert any(load.max_busy_ms_per_s is not None for load in loads), "non-source vertices report busy time"
        assert len(flink.taskmanagers()) >= 1
    finally:
        load.halt()


def test_checkpoints_complete_at_the_configured_interval(demo_job: DemoJob, flink: FlinkRestClient) -> None:
    job_id = demo_job.submit(interval_ms=1500)
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=500, duration_s=15)
    try:
        stats = wait_until(lambda: (s := flink.checkpoints(job_id)).counts.completed >= 5 and s, 40,
                           what="five completed checkpoints")
        assert flink.checkpoint_config(job_id).interval == 1500
        triggers = sorted(h.trigger_timestamp for h in stats.history if h.status == "COMPLETED")
        gaps = [b - a for a, b in itertools.pairwise(triggers)]
        assert statistics.median(gaps) == pytest.approx(1500, abs=400)
        latest = stats.latest.completed
        assert latest is not None and latest.state_size > 0 and latest.external_path
    finally:
        load.halt()


def test_prometheus_reporter_counts_the_jobs_source_records(demo_job: DemoJob) -> None:
    """The reporter keeps counting where REST metrics may go stale, so it must be there and live."""
    demo_job.submit(interval_ms=2000)
    urls = demo_job.stack.prometheus_urls
    load = BackgroundLoad(demo_job.stack.bootstrap, demo_job.settings.input_topic, rate=500, duration_s=20)
    try:
        def count() -> float:
            return source_records_out(scrape(urls), demo_job.settings.name)

        first = wait_until(count, 30, what="the source counter in the Prometheus scrape")
        wait_until(lambda: count() > first, 30, what="the source counter to grow")
    finally:
        load.halt()
