"""`chronos stack up | status | down` on a second, small stack: idempotent, honest, leaves nothing, even
when a user restarted part of it by hand."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from chronos.flink.distribution import find_distribution, script_env
from chronos.stack.local_stack import StackOptions, up
from chronos.stack.processes import is_alive
from chronos.stack.state import load_state
from tests.cli.test_bad_input import chronos
from tests.conftest import cache_dir, wait_until
from tests.support.processes import leftovers


def _restart_jobmanager_by_hand(stack_dir: Path) -> None:
    """What an operator does with Flink's own scripts and the stack's config: stop the JobManager,
    start a new one (another PID, written to Flink's pid file, not to chronos's state)."""
    flink = stack_dir / "flink"
    dist = find_distribution()
    env = script_env(flink / "conf", flink / "log", flink / "pid", flink / "lib")
    for action in ("stop", "start"):
        subprocess.run(["bash", str(dist.bin / "jobmanager.sh"), action], env=env, check=True, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=60)


def test_stack_lifecycle(tmp_path: Path) -> None:
    common = ["--stack-dir", str(tmp_path), "--cache-dir", str(cache_dir())]
    first = chronos("stack", "up", "--slots", "1", "--json", *common, timeout=240)
    try:
        assert first.returncode == 0, first.stderr
        started = json.loads(first.stdout)
        assert started["started"] is True

        again = chronos("stack", "up", "--slots", "1", "--json", *common)
        assert again.returncode == 0 and json.loads(again.stdout)["started"] is False
        assert json.loads(again.stdout)["jobmanager"] == started["jobmanager"]

        healthy = chronos("stack", "status", "--json", "--stack-dir", str(tmp_path))
        assert healthy.returncode == 0, healthy.stdout
        assert json.loads(healthy.stdout)["health"] == "healthy"

        taskmanager = started["taskmanagers"][0]["pid"]
        os.kill(taskmanager, signal.SIGKILL)
        wait_until(lambda: not is_alive(taskmanager), 10, what="the TaskManager to die")
        degraded = chronos("stack", "status", "--json", "--stack-dir", str(tmp_path))
        assert degraded.returncode == 1
        report = json.loads(degraded.stdout)
        assert report["health"] == "degraded"
        assert [c["alive"] for c in report["components"] if c["name"].startswith("flink-taskmanager")] == [False]

        _restart_jobmanager_by_hand(tmp_path)
        assert not is_alive(started["jobmanager"]["pid"])
        assert any("StandaloneSessionClusterEntrypoint" in line for line in leftovers(tmp_path)), "a new JobManager runs"
    finally:
        stopped = chronos("stack", "down", "--stack-dir", str(tmp_path))
    assert stopped.returncode == 0, stopped.stderr
    assert "flink-jobmanager (pid " in stopped.stdout and "from Flink's pid file" in stopped.stdout
    assert "stale" not in stopped.stderr
    assert leftovers(tmp_path) == [], "a process of the stack survived `stack down`"
    assert load_state(tmp_path) is None
    assert chronos("stack", "down", "--stack-dir", str(tmp_path)).stdout.strip() == "nothing was running"
    assert chronos("stack", "status", "--stack-dir", str(tmp_path)).returncode == 1


def test_a_start_interrupted_at_any_step_leaves_nothing_running(tmp_path: Path) -> None:
    """Ctrl-C while `up` waits for Flink: every process started so far is stopped, the state unwritten."""
    def interrupt_when_flink_is_started(step: str) -> None:
        if step.startswith("waiting for Flink"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        up(StackOptions(tmp_path, cache_dir(), slots=1), report=interrupt_when_flink_is_started)
    assert leftovers(tmp_path) == []
    assert load_state(tmp_path) is None
