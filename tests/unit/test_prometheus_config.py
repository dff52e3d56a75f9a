"""The Prometheus config chronos writes passes Prometheus's own checker."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from chronos.flink.prometheus_scrape import PromSample, marker_latency_p99_ms
from chronos.stack.prometheus_server import prometheus_config


def test_targets_are_grouped_by_metrics_path() -> None:
    config = yaml.safe_load(prometheus_config(["http://127.0.0.1:9249/metrics", "127.0.0.1:9250/metrics",
                                               "http://127.0.0.1:9464/"]))
    jobs = {j["metrics_path"]: j["static_configs"][0]["targets"] for j in config["scrape_configs"]}
    assert jobs == {"/metrics": ["127.0.0.1:9249", "127.0.0.1:9250"], "/": ["127.0.0.1:9464"]}


def promtool_check(path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool comes with the prometheus package scripts/setup.sh installs"
    checked = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_promtool_accepts_the_generated_config(tmp_path: Path) -> None:
    path = tmp_path / "prometheus.yml"
    path.write_text(prometheus_config(["127.0.0.1:9249/metrics"]))
    promtool_check(path)


def test_promtool_accepts_the_shipped_config_and_it_scrapes_the_tuners_default_port() -> None:
    shipped = Path(__file__).resolve().parents[2] / "observability" / "prometheus.yml"
    promtool_check(shipped)
    jobs = {j["job_name"]: j for j in yaml.safe_load(shipped.read_text())["scrape_configs"]}
    assert jobs["chronos-tuner"]["static_configs"][0]["targets"] == ["127.0.0.1:9464"]


def test_marker_latency_is_the_worst_p99_of_the_job() -> None:
    name = "flink_taskmanager_job_task_latency_source_id_operator_id_operator_subtask_index_latency"
    samples = [PromSample(name, (("job_name", "my_job"), ("quantile", "0.99")), 12.0),
               PromSample(name, (("job_name", "my_job"), ("quantile", "0.99")), 30.0),
               PromSample(name, (("job_name", "my_job"), ("quantile", "0.5")), 99.0),
               PromSample(name, (("job_name", "other"), ("quantile", "0.99")), 500.0)]
    assert marker_latency_p99_ms(samples, "my-job") == 30.0
    assert marker_latency_p99_ms(samples, "absent") is None
