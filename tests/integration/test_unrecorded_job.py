"""`chronos tune --job ID` on a job chronos has no record of (submitted through Flink's REST API, no job file):
chronos paces its checkpoints and reads its input rate from Flink's own metrics, never restarts it, and says once
at the start what it would need a job file for."""

from __future__ import annotations

import itertools
import signal
import statistics
import time
from pathlib import Path

from chronos.errors import ChronosError
from chronos.flink.prometheus_scrape import PromSample
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.signals.flink_metrics import FlinkMetricSignals, rest_source_samples
from tests.conftest import BackgroundLoad, DemoJob, wait_until
from tests.support.tuning import Tuner


def rest_metric_ids(flink: FlinkRestClient, job_id: str) -> list[str]:
    """What Flink's REST API lists for the job's source vertices (a failure's evidence)."""
    found: list[str] = []
    for vertex in flink.job(job_id).vertices:
        if vertex.is_source:
            found += [m for m in flink.vertex_metric_ids(job_id, vertex.id) if "Offset" in m or "pending" in m]
    return found[:20]

RATE = 400  # events/s: well inside the demo job's capacity on two busy cores


def test_a_job_submitted_elsewhere_is_paced_from_flinks_metrics_alone(demo_job: DemoJob, tmp_path: Path) -> None:
    stack, flink = demo_job.stack, demo_job.flink
    job_id = demo_job.submit(20_000)  # through Flink's REST API: chronos has no record of it
    started_at = flink.job(job_id).start_time
    load = BackgroundLoad(stack.bootstrap, demo_job.settings.input_topic, rate=RATE, duration_s=180)
    ends = TopicEndOffsets(stack.bootstrap, demo_job.settings.input_topic)
    tuner: Tuner | None = None
    try:
        # No --latency-p99: chronos cannot read this job's latency (no output topic known, no latency markers).
        tuner = Tuner("--job", job_id, "--recovery", "30s", "--interval-min", "2s", "--interval-max", "8s",
                      "--startup-grace", "10s", "--decide-every", "5s", "--collect-every", "2s", "--horizon", "20s",
                      "--duration", "120s", "--metrics-port", "-1", "--db", str(tmp_path / "chronos.db"),
                      "--stack-dir", stack.stack_dir)
        said = tuner.wait_for(lambda e: e["event"] == "message" and "has no job file here" in e["text"], 60)
        assert f"chronos job adopt {job_id} --file" in said["text"] and "latency" in said["text"], said
        realizer = tuner.wait_for(lambda e: e["event"] == "realizer", 10)
        assert realizer["realizer"] == "paced" and "no program to restart it with" in realizer["why"], realizer

        # The input rate, from the Kafka source's own offsets and pending records, against what reached the topic.
        wait_until(lambda: len([e for e in tuner.events if e["event"] == "reading" and e["input_rate"]]) >= 3, 60, 1,
                   what="readings with an input rate")
        first_end, first_at = ends.total_end_offset(), time.time() * 1000
        time.sleep(20)
        arrived = (ends.total_end_offset() - first_end) / (time.time() * 1000 - first_at) * 1000
        read = [e["input_rate"] for e in tuner.events if e["event"] == "reading" and e["input_rate"]
                and e["at_ms"] >= first_at + 10_000]  # the rate is read over a 10 s window
        assert read and abs(statistics.median(read) - arrived) <= 0.1 * arrived, (read, arrived)
        # The same metrics through Flink's REST API (for a cluster whose reporter chronos cannot reach): the source's
        # two partitions, its pending records, and an end within the metric fetcher's refresh of the topic's.
        rest = FlinkMetricSignals(flink, job_id, flink.job(job_id).name, [],
                                  read_samples=lambda: rest_source_samples(flink, job_id, flink.job(job_id).name))

        misses: list[str] = []

        def rest_end() -> int | None:
            """Flink's metric handlers answer with what the JobManager's fetcher holds and fetch anew behind it: a
            first ask can find the source's offsets not fetched yet (a missing reading for the tuner, which asks
            again next step, as this does)."""
            samples: list[PromSample] = []
            try:
                samples = rest.reporter()
                return rest.end_offset()
            except ChronosError as exc:
                misses.append(f"{exc} (the reading's metrics: {sorted({s.name for s in samples})})")
                return None

        try:
            reached = wait_until(rest_end, 30, 1, what="the source's offsets through Flink's REST API")
        except AssertionError:
            raise AssertionError(f"{misses[-3:]}; source metric ids Flink lists: {rest_metric_ids(flink, job_id)}") from None
        topic_end = ends.total_end_offset()
        assert topic_end - 10 * RATE <= reached <= topic_end, (reached, topic_end)

        # A cadence change, in force in Flink's checkpoint history: checkpoints at the new cadence, not at 20 s.
        cadence = tuner.wait_for(lambda e: e["event"] == "cadence" and e["to_ms"] < 20_000, 90)
        since = cadence["decided_ms"]

        def paced_checkpoints() -> list[int]:
            history = flink.checkpoints(job_id).history
            return sorted(h.trigger_timestamp for h in history if h.status == "COMPLETED" and h.trigger_timestamp > since)

        wait_until(lambda: len(paced_checkpoints()) >= 3, 60, 1, what="three checkpoints at the paced cadence")
        triggered = paced_checkpoints()
        gaps = [b - a for a, b in itertools.pairwise(triggered)]
        assert gaps and max(gaps) <= cadence["to_ms"] + 3_000 < 20_000, (gaps, cadence)
        tuner.proc.send_signal(signal.SIGTERM)
        assert tuner.finish(60) == 0

        # Never restarted: the same job, running since it was submitted, its own interval untouched.
        job = flink.job(job_id)
        assert job.state == "RUNNING" and job.start_time == started_at
        assert flink.checkpoint_config(job_id).interval == 20_000
        assert not [e for e in tuner.events if e["event"] == "retune"]
        # `--json` is one object per line, its closing summary too.
        assert not [e for e in tuner.events if e["event"] == "not-json"] and tuner.events[-1]["event"] == "summary"
    finally:
        if tuner is not None:
            tuner.kill()
        load.halt()
        ends.close()
