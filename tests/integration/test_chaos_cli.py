"""`chronos chaos kill-taskmanager` on the real stack: one fault, measured, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.stack.state import StackState, load_state
from tests.support.cli import assert_one_line_error, chronos, submit_demo

pytestmark = pytest.mark.long(3)

# The loads here run at 500 events/s, about half of what the demo job took on two busy cores in CI (1,145/s): a
# recovery's catch-up stays short beside the other worker's tests. Recovery is measured the same way at any rate.


def test_kill_taskmanager_reports_a_measured_recovery(stack: StackState, flink: FlinkRestClient) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    job_id = submit_demo(stack, "3s")
    try:
        assert chronos("load", "run", "--rate", "500", "--background", *sd).returncode == 0
        done = chronos("chaos", "kill-taskmanager", "--job", job_id, "--when", "worst-case", "--before", "1",
                       "--warmup", "10", "--hold", "5", "--timeout", "150", "--json", *sd, timeout=300)
        assert done.returncode == 0, done.stderr
        m = json.loads(done.stdout)
        assert m["fault"]["kind"] == "kill-taskmanager" and m["strategy"] == "WorstCase"
        assert m["fault"]["injected_wall_ms"] < m["detected_ms"] < m["running_ms"] <= m["recovered_ms"]
        assert m["recovery_s"] > 0 and m["records_reprocessed"] > 0 and m["interval_ms"] == 3000
    finally:
        chronos("load", "stop", *sd)
        if flink.job(job_id).state == "RUNNING":
            flink.cancel(job_id)


def test_bad_chaos_input_gets_one_line(stack: StackState) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    assert_one_line_error(chronos("chaos", "kill-taskmanager", "--when", "sometime", *sd), "unknown --when")
    assert_one_line_error(chronos("chaos", "kill-taskmanager", "--job", "f" * 32, *sd), "not submitted by chronos")


FAILING_HYPOTHESIS = """
title: latency must be impossibly low
steady-state-hypothesis:
  title: p99 under 1 ms
  window-s: 12
  probes:
    - {name: p99 under 1 ms, signal: p99_ms, max: 1}
method:
  - fault: kill-taskmanager
    when: {strategy: worst-case, before-s: 1}
rollbacks: [restart-taskmanagers, resume-taskmanagers]
"""


def test_failing_hypothesis_stops_before_injecting_and_rollbacks_run(stack: StackState, flink: FlinkRestClient,
                                                                     tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    job_id = submit_demo(stack, "2s")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(FAILING_HYPOTHESIS)
    journal = tmp_path / "journal.json"
    before = load_state(stack.stack_dir_path)
    try:
        assert chronos("load", "run", "--rate", "500", "--background", *sd).returncode == 0
        done = chronos("chaos", "run", str(experiment), "--job", job_id, "--journal", str(journal), "--json", *sd,
                       timeout=200)
        assert done.returncode == 2, done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "aborted" and result["measurements"] == []
        assert result["before"]["probes"][0]["ok"] is False
        kinds = [e["kind"] for e in result["journal"]]
        assert "inject" not in kinds
        assert kinds[-4:] == ["abort", "rollback", "rollback", "end"]
        assert json.loads(journal.read_text())["status"] == "aborted"
        after = load_state(stack.stack_dir_path)
        assert before is not None and after is not None and after.taskmanager_pids == before.taskmanager_pids
        assert flink.job(job_id).state == "RUNNING"
    finally:
        chronos("load", "stop", *sd)
        if flink.job(job_id).state == "RUNNING":
            flink.cancel(job_id)


# The experiment with its own bounded load (the exactly-once proof of `chaos run`) runs on the secured stack, where
# its load, input count and output check log in over TLS: tests/integration/test_secured_stack.py.
