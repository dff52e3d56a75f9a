"""The tuner's latency signal, three ways, on the real stack: the committed output's timestamps,
Flink's latency markers from its Prometheus reporter, and a PromQL query on a real Prometheus
(Debian's package, started here on loopback with a config this test writes)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronos.flink.prometheus_scrape import label_value
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.demo import JOB_FILE as DEMO_PROGRAM
from chronos.signals.latency_sources import FlinkLatencyMarkers, PromQLLatency
from chronos.stack.prometheus_server import PrometheusServer, start_prometheus
from chronos.stack.state import StackState
from chronos.tune.journal import TuneJournal
from tests.support.cli import assert_one_line_error, chronos

JOB_FILE = """
name: latency-markers-demo
program:
  python: {job}
  args: [--bootstrap, "${{bootstrap}}", --input-topic, vehicle-events, --output-topic, marker-stats,
         --group-id, marker-demo, --transactional-id-prefix, marker-demo, --job-name, latency-markers-demo]
parallelism: 1
flink-config: {{metrics.latency.interval: "500"}}
io:
  bootstrap: "${{bootstrap}}"
  input-topic: vehicle-events
  output-topic: marker-stats
  latency-source: {source}
  latency-query: '{query}'
  prometheus-url: '{url}'
"""
QUERY = ('max(flink_taskmanager_job_task_latency_source_id_operator_id_operator_subtask_index_latency'
         '{{quantile="0.99",job_name="{job}"}}) / 1000')


@pytest.fixture()
def prometheus(stack: StackState, tmp_path: Path) -> Iterator[PrometheusServer]:
    server = start_prometheus(tmp_path / "prometheus", stack.prometheus_urls)
    try:
        yield server
    finally:
        server.purge()


def wait_for(read, timeout_s: float) -> float:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = read()
        if value is not None:
            return float(value)
        time.sleep(1)
    raise AssertionError(f"no value within {timeout_s} s")


def test_markers_and_promql_give_the_latency_and_tune_reads_it(stack: StackState, flink: FlinkRestClient,
                                                               prometheus: PrometheusServer, tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    name = "latency-markers-demo"
    query = QUERY.format(job=label_value(name))
    file = tmp_path / "job.yaml"
    file.write_text(JOB_FILE.format(job=DEMO_PROGRAM, source="promql", query=query, url=prometheus.url))
    submitted = chronos("job", "submit", "--file", str(file), "--interval", "5s", "--json", *sd)
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    try:
        assert chronos("load", "run", "--rate", "500", "--background", *sd).returncode == 0
        markers = wait_for(lambda: FlinkLatencyMarkers(stack.prometheus_urls, name).p99_ms(0, 0), 90)
        assert 0 <= markers < 10_000, "source-to-operator marker latency, in ms"
        promql = wait_for(lambda: PromQLLatency(prometheus.url, query).p99_ms(0, 0), 60)
        assert 0 <= promql < 10_000
        assert PromQLLatency(prometheus.url, "nonexistent_metric").p99_ms(0, 0) is None
        assert PromQLLatency("http://127.0.0.1:9", query).p99_ms(0, 0) is None, "unreachable: no reading, no crash"
        # Its own p99 learnt too: 10 s of settling (two intervals), then 25 s (five) of steady running at 5 s.
        tuned = chronos("tune", "--job", job_id, "--latency-p99", "2s", "--recovery", "60s", "--dry-run", "--json",
                        "--decide-every", "5s", "--collect-every", "2s", "--duration", "45s", "--metrics-port", "-1",
                        "--latency-window", "10s", "--learn-latency-every", "10s",
                        "--db", str(tmp_path / "chronos.db"), *sd, timeout=120)
        assert tuned.returncode == 0, tuned.stderr
        events = [json.loads(line) for line in tuned.stdout.splitlines() if line.startswith('{"event": ')]
        decisions = [e for e in events if e["event"] == "decision"]
        assert decisions and all(d["observed_p99_ms"] is not None for d in decisions), "p99 read through PromQL"
        assert all(d["observed_p99_ms"] < 10_000 for d in decisions), "marker-sized, not commit-sized: it is the query's"
        learnt = [e["text"] for e in events if e["event"] == "message" and e["text"].startswith("live p99 at 5 s")]
        assert learnt, [e.get("text") for e in events if e["event"] == "message"]
        journal = TuneJournal(tmp_path / "chronos.db")
        windows = journal.latencies(name)
        journal.close()
        assert windows and all(w.interval_ms == 5000 and 0 <= w.p99_ms < 10_000 for w in windows), windows
        # The observer follows the job's own output topic (marker-stats), not the demo's.
        observed = chronos("observe", "run", "--job", job_id, "--window", "10", "--duration", "12", *sd, timeout=60)
        assert observed.returncode == 0, observed.stderr
        last = observed.stderr.strip().splitlines()[-1].split()
        assert last[0] == "records" and int(last[1]) > 0, observed.stderr
        assert_one_line_error(chronos("observe", "run", "--job", "f" * 32, "--duration", "1", *sd),
                              "not submitted or adopted by chronos")
    finally:
        chronos("load", "stop", *sd)
        if flink.job(job_id).state == "RUNNING":
            flink.cancel(job_id)
