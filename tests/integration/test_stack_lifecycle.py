"""`chronos stack up | status | down` on a second, small stack: idempotent, honest, leaves nothing."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from chronos.stack.processes import is_alive
from chronos.stack.state import load_state
from tests.cli.test_bad_input import chronos
from tests.conftest import cache_dir, wait_until


def test_stack_lifecycle(tmp_path: Path) -> None:
    common = ["--stack-dir", str(tmp_path), "--cache-dir", str(cache_dir())]
    first = chronos("stack", "up", "--slots", "1", "--json", *common, timeout=240)
    try:
        assert first.returncode == 0, first.stderr
        started = json.loads(first.stdout)
        assert started["started"] is True

        again = chronos("stack", "up", "--slots", "1", "--json", *common)
        assert again.returncode == 0 and json.loads(again.stdout)["started"] is False
        assert json.loads(again.stdout)["jobmanager_pid"] == started["jobmanager_pid"]

        healthy = chronos("stack", "status", "--json", "--stack-dir", str(tmp_path))
        assert healthy.returncode == 0, healthy.stdout
        assert json.loads(healthy.stdout)["health"] == "healthy"

        taskmanager = started["taskmanager_pids"][0]
        os.kill(taskmanager, signal.SIGKILL)
        wait_until(lambda: not is_alive(taskmanager), 10, what="the TaskManager to die")
        degraded = chronos("stack", "status", "--json", "--stack-dir", str(tmp_path))
        assert degraded.returncode == 1
        report = json.loads(degraded.stdout)
        assert report["health"] == "degraded"
        assert [c["alive"] for c in report["components"] if c["name"].startswith("flink-taskmanager")] == [False]
    finally:
        stopped = chronos("stack", "down", "--stack-dir", str(tmp_path))
    assert stopped.returncode == 0
    state_pids = [started["kafka_pid"], started["jobmanager_pid"], *started["taskmanager_pids"]]
    assert not [pid for pid in state_pids if is_alive(pid)], "a process survived `stack down`"
    assert load_state(tmp_path) is None
    assert chronos("stack", "down", "--stack-dir", str(tmp_path)).stdout.strip() == "nothing was running"
    assert chronos("stack", "status", "--stack-dir", str(tmp_path)).returncode == 1
