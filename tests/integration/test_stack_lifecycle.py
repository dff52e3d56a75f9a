"""`chronos stack up | status | down` on a second, small stack: idempotent, honest, leaves nothing, even
when a user restarted part of it by hand."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest

from chronos.flink.distribution import find_distribution, script_env
from chronos.stack.local_stack import StackOptions, up
from chronos.stack.processes import is_alive
from chronos.stack.service_account import account_of
from chronos.stack.state import load_state
from tests.conftest import cache_dir, wait_until
from tests.support.cli import chronos
from tests.support.processes import leftovers

# A minute on stacks of its own, their JVMs starting on both cores: scheduled with the other stack modules, not among
# the last, light ones, whose sweeps time the CLI against its deadlines (tests/security).
pytestmark = pytest.mark.long(1)


def _restart_jobmanager_by_hand(stack_dir: Path) -> None:
    """What an operator does with Flink's own scripts and the stack's config: stop the JobManager,
    start a new one (another PID, written to Flink's pid file, not to chronos's state)."""
    state = load_state(stack_dir)
    assert state is not None
    flink, account = state.flink_home, account_of(Path(state.services_dir))
    dist = find_distribution()
    env = script_env(flink / "conf", flink / "log", flink / "pid", flink / "lib", account.run_as())
    for action in ("stop", "start"):
        subprocess.run(["bash", str(dist.bin / "jobmanager.sh"), action], env=env, check=True, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=60, **account.popen_kwargs())


SECRET = "s3cret-value-of-the-operator-shell"


def _private(path: Path, mode: int) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == mode


def _services_leak_nothing_and_keep_to_themselves(started: dict[str, Any], stack_dir: Path) -> None:
    """What the services were given and what chronos wrote: no secret of the operator's shell in any
    file of the services (PyFlink logs the environment of each Python process), private files, and as
    root no service running as root."""
    services = Path(started["services_dir"])
    logs = list((services / "flink" / "log").glob("*.log"))
    assert any("Starting Python process with environment variables" in log.read_text() for log in logs)
    leaked = [f for f in services.rglob("*") if f.is_file() and SECRET.encode() in f.read_bytes()]
    assert leaked == [], f"the operator's environment reached {leaked}"
    assert _private(stack_dir, 0o700) and _private(stack_dir / "stack.json", 0o600)
    assert _private(stack_dir / "jobs", 0o700) and all(_private(r, 0o600) for r in (stack_dir / "jobs").glob("*.json"))
    assert _private(services, 0o700)
    if os.geteuid() == 0:
        owners = {psutil.Process(p["pid"]).username() for p in (started["jobmanager"], *started["taskmanagers"],
                                                                  started["kafka"])}
        assert owners == {started["service_user"]} and started["service_user"] != "root"
        assert services.owner() == started["service_user"]


def test_stack_lifecycle(tmp_path: Path) -> None:
    common = ["--stack-dir", str(tmp_path), "--cache-dir", str(cache_dir())]
    shell = {**os.environ, "CHRONOS_TEST_TOKEN": SECRET}
    first = chronos("stack", "up", "--slots", "1", "--json", *common, timeout=240, env=shell)
    try:
        assert first.returncode == 0, first.stderr
        started = json.loads(first.stdout)
        assert started["started"] is True
        submitted = chronos("job", "submit", "demo", "--parallelism", "1", "--stack-dir", str(tmp_path), env=shell)
        assert submitted.returncode == 0, submitted.stderr
        _services_leak_nothing_and_keep_to_themselves(started, tmp_path)

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
        stopped = chronos("stack", "down", "--purge", "--stack-dir", str(tmp_path))
    assert stopped.returncode == 0, stopped.stderr
    assert "flink-jobmanager (pid " in stopped.stdout and "from Flink's pid file" in stopped.stdout
    assert "stale" not in stopped.stderr
    assert leftovers(tmp_path) == [], "a process of the stack survived `stack down`"
    assert load_state(tmp_path) is None
    if started["service_user"] is not None:  # as root: the services' own directory went with --purge
        assert not Path(started["services_dir"]).exists()
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
