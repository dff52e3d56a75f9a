"""`chronos tune --jobs` and `--discover` on bad input: one line naming what is wrong, before anything starts."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import assert_one_line_error, chronos

A = "a" * 32


def test_a_jobs_file_that_is_missing_or_wrong_is_one_line(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path), "--db", str(tmp_path / "c.db"), "--metrics-port", "-1"]
    assert_one_line_error(chronos("tune", "--jobs", str(tmp_path / "none.yaml"), *sd), "none.yaml")
    bad = tmp_path / "jobs.yaml"
    bad.write_text(f"defaults: {{recovery_s: 60}}\njobs:\n  - {{name: orders, job: {A}}}\n  - {{name: orders, job: {A}}}\n")
    assert_one_line_error(chronos("tune", "--jobs", str(bad), *sd), "job name 'orders' is given twice")
    bad.write_text(f"defaults: {{recovery_s: 60}}\njobs:\n  - {{name: orders, job: {A}, rest_url: 'gopher://u:s3cr3tZ@x'}}\n")
    done = chronos("tune", "--jobs", str(bad), *sd)
    assert_one_line_error(done, "rest_url is not a URL chronos takes")
    assert "s3cr3tZ" not in done.stderr, "a URL may hold a password: never repeated"


def test_one_jobs_flags_do_not_go_with_many(tmp_path: Path) -> None:
    listed = tmp_path / "jobs.yaml"
    listed.write_text(f"defaults: {{recovery_s: 60}}\njobs:\n  - {{name: orders, job: {A}}}\n")
    assert_one_line_error(chronos("tune", "--jobs", str(listed), "--latency-p99", "1s", "--job", A),
                          "--jobs takes each job and its policy from the file: --job, --latency-p99 go in it")
    assert_one_line_error(chronos("tune", "--discover", "streaming", "--flink-deployment", "x"),
                          "--discover takes each job from its FlinkDeployment: --flink-deployment does not go with it")
    assert_one_line_error(chronos("tune", "--discover", "streaming", "--jobs", str(listed)), "--jobs")


def test_discovery_without_kubernetes_credentials_is_one_line(tmp_path: Path) -> None:
    no_cluster = {"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    assert_one_line_error(chronos("tune", "--discover", "streaming", "--recovery", "60s", "--stack-dir", str(tmp_path),
                                  "--metrics-port", "-1", env=no_cluster), "no Kubernetes credentials")
