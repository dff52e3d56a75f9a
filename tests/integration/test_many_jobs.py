"""`chronos tune --jobs FILE` on the real stack: one process tunes three running jobs (two with job files, one known to
Flink alone), each paced on its own, every one under its own `job_name` on one metrics endpoint; a job cancelled from
outside is said and let go while the others go on; the file edited under it lets go of the job it lost and leaves the
others untouched, and SIGHUP takes the job up again."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import httpx
import yaml

from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.job_file import load_job_file
from chronos.jobs.shipped import own_copy
from chronos.jobs.topics import ensure_topics
from chronos.metrics.exporter import job_label
from chronos.model import CheckpointSettings
from chronos.stack.state import StackState
from tests.conftest import BackgroundLoad, wait_until
from tests.support.cli import chronos
from tests.support.quiesce import quiesce
from tests.support.tuning import Tuner

RATE = 150  # events/s per job: three SQL jobs and their loads beside the suite's other worker on two cores


def zones_file(tmp_path: Path, tag: str) -> Path:
    """The shipped zones job with topics, group and name of its own, on one slot."""
    return own_copy("speeding_zones.yaml", tmp_path, tag, parallelism=1)


def jobs_file(path: Path, jobs: dict[str, str]) -> None:
    path.write_text(yaml.safe_dump({
        "defaults": {"recovery_s": 30, "interval_min_s": 2, "interval_max_s": 8, "startup_grace_s": 10,
                     "horizon_s": 20},
        "jobs": [{"name": name, "job": job_id} for name, job_id in jobs.items()]}))


def of(tuner: Tuner, kind: str, name: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    return [e for e in tuner.events if e["event"] == kind and (name is None or e.get("job_name") == name)]


def test_one_process_tunes_three_jobs_each_on_its_own(stack: StackState, flink: FlinkRestClient, tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    submitter = RestSubmitter(flink, find_distribution().python_jar)
    tags = {name: f"{name}-{uuid.uuid4().hex[:6]}" for name in ("orders", "fleet", "outside")}
    files = {name: zones_file(tmp_path, tag) for name, tag in tags.items()}
    specs = {name: load_job_file(path, {"bootstrap": stack.bootstrap}) for name, path in files.items()}
    names = {spec.name for spec, _ in specs.values()}
    ids: dict[str, str] = {}
    loads: list[BackgroundLoad] = []
    tuner: Tuner | None = None
    try:
        for name, (spec, io) in specs.items():
            ensure_topics(stack.bootstrap, [io.input_topic, io.output_topic], partitions=2)
            ids[name] = submitter.submit(spec, CheckpointSettings(20_000))
            loads.append(BackgroundLoad(stack.bootstrap, io.input_topic, rate=RATE, duration_s=600))
        for name in ("orders", "fleet"):  # two adopted (their io known); "outside" known to Flink alone
            flink.wait_until_running(ids[name], timeout_s=120)
            assert chronos("job", "adopt", ids[name], "--file", str(files[name]), *sd).returncode == 0
        flink.wait_until_running(ids["outside"], timeout_s=120)
        started = {name: flink.job(job_id).start_time for name, job_id in ids.items()}
        listed = tmp_path / "jobs.yaml"
        jobs_file(listed, ids)

        tuner = Tuner("--jobs", str(listed), "--decide-every", "5s", "--collect-every", "2s", "--metrics-port", "0",
                      "--db", str(tmp_path / "chronos.db"), "--duration", "300s", *sd)
        said = tuner.wait_for(lambda e: e["event"] == "message" and "metrics on http" in e["text"], 60)
        metrics_url = said["text"].split("metrics on ")[1].strip()
        for name in ids:
            tuner.wait_for(lambda e, n=name: e["event"] == "realizer" and e.get("job_name") == n, 90)
        assert of(tuner, "realizer", "outside")[0]["realizer"] == "paced"
        assert "no program to restart it with" in of(tuner, "realizer", "outside")[0]["why"]
        # Each job paced on its own: a cadence change below its 20 s for every one of them.
        for name in ids:
            tuner.wait_for(lambda e, n=name: e["event"] == "cadence" and e.get("job_name") == n
                           and e["to_ms"] < 20_000, 120)
        # One endpoint, every job under its Flink name.
        text = httpx.get(metrics_url, timeout=10).text
        for flink_name in names:
            assert f'chronos_checkpoint_interval_seconds{{job_name="{job_label(flink_name)}"}}' in text, flink_name

        # Cancelled from outside: said and let go; the others are read on.
        flink.cancel(ids["outside"])
        left = tuner.wait_for(lambda e: e["event"] == "left" and e["job_name"] == "outside", 60)
        assert "CANCELED" in left["why"] and "not by chronos" in left["why"], left
        count = {name: len(of(tuner, "reading", name)) for name in ("orders", "fleet")}
        wait_until(lambda: all(len(of(tuner, "reading", n)) >= count[n] + 3 for n in count), 30, 1,
                   what="readings of the two jobs left")

        # The file loses "fleet": let go, "orders" untouched; SIGHUP with it back takes it up again.
        jobs_file(listed, {"orders": ids["orders"]})
        dropped = tuner.wait_for(lambda e: e["event"] == "left" and e["job_name"] == "fleet", 30)
        assert dropped["why"] == "no longer in the jobs file", dropped
        orders_before = len(of(tuner, "reading", "orders"))
        jobs_file(listed, {"orders": ids["orders"], "fleet": ids["fleet"]})
        tuner.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: len(of(tuner, "joined", "fleet")) == 2, 30, 0.5, what="fleet taken up again")
        tuner.wait_for(lambda e: e["event"] == "realizer" and e.get("job_name") == "fleet"
                       and len(of(tuner, "realizer", "fleet")) == 2, 60)
        assert len(of(tuner, "joined", "orders")) == 1 and not of(tuner, "left", "orders")
        # ... and read on meanwhile: its next collection may come after fleet's take-up (one on a loaded host takes
        # seconds), so its reading is waited for, not expected by the moment fleet is back.
        wait_until(lambda: len(of(tuner, "reading", "orders")) > orders_before, 30, 0.5,
                   what="a reading of orders after fleet was taken up again")
        assert len(of(tuner, "joined", "orders")) == 1 and not of(tuner, "left", "orders")

        tuner.proc.send_signal(signal.SIGTERM)
        assert tuner.finish(60) == 0
        summary = tuner.events[-1]
        assert summary["event"] == "summary", summary
        assert sorted(job["name"] for job in summary["jobs"]) == ["fleet", "fleet", "orders", "outside"]
        assert summary["steps"] > 0 and summary["lateness_p99_s"] < 2.0, summary
        assert not of(tuner, "trouble") and not of(tuner, "not-json"), of(tuner, "trouble")
        # Paced, never restarted: the same jobs as submitted, still running with their own 20 s.
        for name in ("orders", "fleet"):
            job = flink.job(ids[name])
            assert job.state == "RUNNING" and job.start_time == started[name], name
            assert flink.checkpoint_config(ids[name]).interval == 20_000
        assert not of(tuner, "retune")
    finally:
        if tuner is not None:
            tuner.kill()
        for load in loads:
            load.halt()
        quiesce(flink, lambda _jid, job_name: job_name in names)


def flink_deployment(name: str, job_id: str, annotations: dict[str, str]) -> dict:  # type: ignore[type-arg]
    """A FlinkDeployment as the operator's v1beta1 CRD shapes it, running `job_id` (on the local stack here)."""
    configuration = {"execution.checkpointing.interval": "20s"}
    return {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": name, "namespace": "streaming", "annotations": annotations},
            "spec": {"job": {"upgradeMode": "savepoint", "jarURI": "local:///opt/flink/job.jar"},
                     "flinkConfiguration": configuration},
            "status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING", "jobId": job_id},
                       "reconciliationStatus": {"lastReconciledSpec": json.dumps({"flinkConfiguration": configuration})}}}


def test_annotated_flinkdeployments_are_found_tuned_and_let_go(stack: StackState, flink: FlinkRestClient,
                                                                tmp_path: Path) -> None:
    """`chronos tune --discover NAMESPACE` against an API server on 127.0.0.1 (tests/support/fake_kube_api.py: no
    cluster is reachable here) whose FlinkDeployment runs a real job on the local stack, reached at the REST URL its
    annotation gives."""
    from tests.support.fake_kube_api import serving

    tag = f"k8s-{uuid.uuid4().hex[:6]}"
    spec, io = load_job_file(zones_file(tmp_path, tag), {"bootstrap": stack.bootstrap})
    ensure_topics(stack.bootstrap, [io.input_topic, io.output_topic], partitions=2)
    job_id = RestSubmitter(flink, find_distribution().python_jar).submit(spec, CheckpointSettings(20_000))
    load = BackgroundLoad(stack.bootstrap, io.input_topic, rate=RATE, duration_s=300)
    tuner: Tuner | None = None
    try:
        flink.wait_until_running(job_id, timeout_s=120)
        objects = {
            ("streaming", "zones"): flink_deployment("zones", job_id, {"chronos/tune": "true",
                                                                        "chronos/rest-url": stack.rest_url}),
            ("streaming", "typo"): flink_deployment("typo", job_id, {"chronos/tune": "true", "chronos/recovery": "1"}),
            ("streaming", "off"): flink_deployment("off", job_id, {"chronos/recovery-s": "10"}),
        }
        with serving(objects) as (url, api):
            kubeconfig = tmp_path / "kubeconfig"
            kubeconfig.write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "x",
                "clusters": [{"name": "c", "cluster": {"server": url}}], "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
            tuner = Tuner("--discover", "streaming", "--discover-every", "2s", "--recovery", "30s",
                          "--interval-min", "2s", "--interval-max", "8s", "--startup-grace", "10s", "--horizon", "20s",
                          "--decide-every", "5s", "--collect-every", "2s", "--metrics-port", "-1",
                          "--db", str(tmp_path / "chronos.db"), "--duration", "240s", "--stack-dir", stack.stack_dir,
                          env={"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)})
            refused = tuner.wait_for(lambda e: e["event"] == "message" and "not tuned:" in e["text"], 60)
            assert "FlinkDeployment streaming/typo: invalid policy: recovery: Extra inputs" in refused["text"], refused
            realizer = tuner.wait_for(lambda e: e["event"] == "realizer" and e.get("job_name") == "streaming.zones", 90)
            assert realizer["realizer"] == "paced", realizer
            tuner.wait_for(lambda e: e["event"] == "cadence" and e.get("job_name") == "streaming.zones"
                           and e["to_ms"] < 20_000, 120)
            del api.objects[("streaming", "zones")]["metadata"]["annotations"]["chronos/tune"]
            left = tuner.wait_for(lambda e: e["event"] == "left" and e["job_name"] == "streaming.zones", 30)
            assert left["why"] == 'its FlinkDeployment is gone or no longer annotated chronos/tune: "true"', left
            tuner.proc.send_signal(signal.SIGTERM)
            assert tuner.finish(60) == 0
            assert not of(tuner, "joined", "streaming.off") and not of(tuner, "joined", "streaming.typo")
            assert api.content_types == [], "paced through Flink's REST API: the deployment was never patched"
        assert flink.job(job_id).state == "RUNNING" and flink.checkpoint_config(job_id).interval == 20_000
        assert not of(tuner, "trouble") and not of(tuner, "not-json")
    finally:
        if tuner is not None:
            tuner.kill()
        load.halt()
        quiesce(flink, lambda _jid, job_name: job_name == spec.name)
