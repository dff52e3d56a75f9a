"""The newcomer's path through the CLI on the real stack: submit the demo, run load and the
observer in the background, read `status`, retune, stop with a savepoint; helpers stop with the stack."""

from __future__ import annotations

import json

from chronos.flink.rest import FlinkRestClient
from chronos.stack.helpers import live_helpers
from chronos.stack.processes import is_alive
from chronos.stack.state import StackState
from tests.conftest import wait_until
from tests.support.cli import chronos


def _status(stack: StackState, job_id: str) -> dict[str, object]:
    done = chronos("status", "--job", job_id, "--json", "--stack-dir", stack.stack_dir)
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)
    assert len(reports) == 1
    report: dict[str, object] = reports[0]
    return report


def test_submit_observe_status_retune_stop(stack: StackState, flink: FlinkRestClient) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    submitted = chronos("job", "submit", "demo", "--interval", "2s", "--parallelism", "1", "--json", *sd)
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    new_id = job_id
    try:
        assert chronos("load", "run", "--rate", "800", "--background", *sd).returncode == 0
        assert chronos("observe", "run", "--window", "20", "--background", *sd).returncode == 0
        assert set(live_helpers(stack.stack_dir_path).running) == {"load", "observe"}

        listed = json.loads(chronos("job", "list", "--json", *sd).stdout)
        assert job_id in {j["jid"] for j in listed}

        report = wait_until(
            lambda: (r := _status(stack, job_id))["p99_latency_ms"] is not None
            and (r["source_records_per_s"] or 0) > 0 and r,  # type: ignore[operator]
            90, interval_s=2, what="status to show latency and throughput",
        )
        assert report["state"] == "RUNNING" and report["interval_ms"] == 2000
        assert report["completed_checkpoints"] >= 1  # type: ignore[operator]
        # What the job is sent now, off the input topic's end offsets (Flink's own meter is a 60 s mean).
        assert report["input_rate_window_s"] and 400 <= report["input_events_per_s"] <= 1200, report  # type: ignore[operator]

        dry = chronos("job", "retune", job_id, "--interval", "4s", "--dry-run", *sd)
        assert dry.returncode == 0 and "would stop" in dry.stdout
        assert flink.job(job_id).state == "RUNNING"

        retuned = chronos("job", "retune", job_id, "--interval", "4s", "--json", *sd)
        assert retuned.returncode == 0, retuned.stderr
        result = json.loads(retuned.stdout)
        new_id = result["new_job_id"]
        assert flink.checkpoint_config(new_id).interval == 4000
        assert _status(stack, new_id)["restored_from"] == result["savepoint"]

        stopped = chronos("job", "stop", new_id, *sd)
        assert stopped.returncode == 0, stopped.stderr
        savepoint = stopped.stdout.strip()
        assert "savepoint" in savepoint
        assert flink.job(new_id).state == "FINISHED"

        # A stopped job (e.g. a retune interrupted after its savepoint) resumes from the savepoint on record.
        resumed = chronos("job", "retune", new_id, "--interval", "6s", "--json", *sd)
        assert resumed.returncode == 0, resumed.stderr
        third = json.loads(resumed.stdout)
        assert third["resumed"] is True and third["savepoint"] == savepoint
        new_id = third["new_job_id"]
        assert flink.checkpoint_config(new_id).interval == 6000
        again = chronos("job", "retune", third["old_job_id"], "--interval", "7s", *sd)
        assert again.returncode == 1 and "already replaced" in again.stderr
    finally:
        helpers = live_helpers(stack.stack_dir_path).running
        chronos("load", "stop", *sd)
        chronos("observe", "stop", *sd)
        for jid in {job_id, new_id}:
            if flink.job(jid).state == "RUNNING":
                flink.cancel(jid)
    assert not [pid for pid in helpers.values() if is_alive(pid)]


def test_rocksdb_with_incremental_checkpoints(stack: StackState, flink: FlinkRestClient) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    done = chronos("job", "submit", "demo", "--interval", "1s", "--state-backend", "rocksdb", "--incremental",
                   "--parallelism", "1", "--json", *sd)
    assert done.returncode == 0, done.stderr
    job_id = json.loads(done.stdout)["job_id"]
    try:
        config = flink.checkpoint_config(job_id)
        assert config.state_backend is not None and "RocksDB" in config.state_backend
        wait_until(lambda: flink.checkpoints(job_id).counts.completed >= 2, 60, what="RocksDB checkpoints")
    finally:
        flink.cancel(job_id)


def test_submission_through_flink_run(stack: StackState, flink: FlinkRestClient) -> None:
    """The CLI path (a `flink run` JVM per submission), kept as the reference the REST path is measured against."""
    done = chronos("job", "submit", "demo", "--path", "cli", "--interval", "3s", "--parallelism", "1", "--json",
                   "--stack-dir", stack.stack_dir)
    assert done.returncode == 0, done.stderr
    job_id = json.loads(done.stdout)["job_id"]
    try:
        assert flink.job(job_id).all_running
        assert flink.checkpoint_config(job_id).interval == 3000
    finally:
        flink.cancel(job_id)
