"""Every bad input gets one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from chronos.stack.ports import free_ports
from chronos.stack.state import StackState
from tests.support.cli import assert_one_line_error, chronos


def test_unreachable_rest_url() -> None:
    port = free_ports(1)[0]
    assert_one_line_error(chronos("job", "list", "--rest-url", f"http://127.0.0.1:{port}"), "cannot reach the Flink REST API")


@pytest.mark.parametrize("interval", ["-5s", "abc", "0s"])
def test_invalid_interval(interval: str, tmp_path: Path) -> None:
    done = chronos("job", "submit", "--interval", interval, "--stack-dir", str(tmp_path))
    assert_one_line_error(done, "invalid interval", repr(interval))


def test_stack_not_running(tmp_path: Path) -> None:
    assert_one_line_error(chronos("status", "--stack-dir", str(tmp_path)), "no stack is running", "chronos stack up")


def test_unknown_job_name(tmp_path: Path) -> None:
    assert_one_line_error(chronos("job", "submit", "wordcount", "--stack-dir", str(tmp_path)), "unknown job 'wordcount'")


def test_maven_missing(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    done = chronos("stack", "up", "--stack-dir", str(tmp_path / "s"), "--cache-dir", str(tmp_path / "cache"), env=env)
    assert_one_line_error(done, "Maven (mvn) is not installed")


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = chronos("stack", "up", "--stack-dir", str(tmp_path), "--rest-port", str(port))
    assert_one_line_error(done, f"port {port}", "already in use")


def test_kafka_unavailable() -> None:
    port = free_ports(1)[0]
    done = chronos("load", "run", "--count", "10", "--bootstrap", f"127.0.0.1:{port}")
    assert_one_line_error(done, "cannot reach Kafka")


def test_bad_rate_trace(tmp_path: Path) -> None:
    done = chronos("load", "run", "--profile", "csv", "--trace", str(tmp_path / "none.csv"), "--bootstrap", "x:1")
    assert_one_line_error(done, "does not exist")
    done = chronos("load", "shop", "--trace", str(tmp_path / "none.csv"), "--bootstrap", "x:1")
    assert_one_line_error(done, "does not exist")


def test_unknown_job_id_on_a_live_cluster(stack: StackState) -> None:
    done = chronos("status", "--job", "0" * 32, "--rest-url", stack.rest_url)
    assert_one_line_error(done, "no such job", "0" * 32)
    done = chronos("job", "stop", "not-a-job", "--rest-url", stack.rest_url, "--stack-dir", stack.stack_dir)
    assert_one_line_error(done, "not a Flink job id")


def test_retune_of_a_job_chronos_did_not_submit(stack: StackState) -> None:
    done = chronos("job", "retune", "f" * 32, "--interval", "5s", "--stack-dir", stack.stack_dir)
    assert_one_line_error(done, "was not submitted by chronos")


def test_malformed_bootstrap() -> None:
    assert_one_line_error(chronos("load", "run", "--count", "1", "--bootstrap", "localhost"), "invalid Kafka bootstrap")


def test_invalid_experiment_file(tmp_path: Path) -> None:
    bad = tmp_path / "exp.yaml"
    bad.write_text("title: no method\n")
    assert_one_line_error(chronos("chaos", "run", str(bad), "--stack-dir", str(tmp_path)), "steady-state-hypothesis")
    assert_one_line_error(chronos("chaos", "run", str(tmp_path / "none.yaml")), "cannot read experiment")


def test_profile_without_a_stack_or_a_database(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path)]
    assert_one_line_error(chronos("profile", "run", *sd), "no stack is running")
    assert_one_line_error(chronos("profile", "report", *sd), "no profile database", "chronos profile run")


def test_profile_report_of_an_unknown_profile(tmp_path: Path) -> None:
    from chronos.profiler.store import ProfileStore

    ProfileStore(tmp_path / "profiles.db").close()
    sd = ["--stack-dir", str(tmp_path)]
    assert_one_line_error(chronos("profile", "report", *sd), "no profile in", "yet")
    assert_one_line_error(chronos("profile", "report", "--profile", "nope", *sd), "no profile nope")
    (tmp_path / "broken.db").write_text("garbage " * 200)
    assert_one_line_error(chronos("profile", "report", "--db", str(tmp_path / "broken.db"), *sd),
                          "is not a chronos profile database")


def test_tune_of_a_flinkdeployment_without_a_cluster(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path), "--latency-p99", "1s", "--recovery", "60s", "--db", str(tmp_path / "c.db")]
    no_cluster = {"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    # no job file: the operator owns the spec; its name and signals come from Flink (it gets as far as Kubernetes)
    assert_one_line_error(chronos("tune", "--flink-deployment", "fleet", "--rest-url", "http://127.0.0.1:9", *sd,
                                  env=no_cluster), "no Kubernetes credentials")
    job = tmp_path / "job.yaml"
    job.write_text("name: fleet\nio: {bootstrap: 'kafka:9092', input-topic: a, output-topic: b}\n")
    assert_one_line_error(chronos("tune", "--flink-deployment", "fleet", "--job-file", str(job),
                                  "--rest-url", "http://127.0.0.1:9", *sd, env=no_cluster), "no Kubernetes credentials")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    unreachable = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    assert_one_line_error(chronos("tune", "--flink-deployment", "fleet", "--job-file", str(job),
                                  "--rest-url", "http://127.0.0.1:9", *sd, env=unreachable, timeout=180),
                          "cannot reach Kubernetes to get FlinkDeployment default/fleet")


def test_prometheus_without_a_stack(tmp_path: Path) -> None:
    assert_one_line_error(chronos("prometheus", "up", "--stack-dir", str(tmp_path)), "no stack in", "chronos stack up")


def test_tune_with_an_unknown_realizer_is_one_line(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path), "--latency-p99", "1s", "--recovery", "60s", "--db", str(tmp_path / "c.db")]
    assert_one_line_error(chronos("tune", "--realize", "sometimes", *sd), "--realize 'sometimes': one of auto, paced")
