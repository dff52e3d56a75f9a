"""Running chronos as a user does, and what a one-line error must look like."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chronos.stack.state import StackState


def chronos(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if env is not None and cwd is not None:  # run elsewhere, chronos must still import as this checkout has it
        env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)


def assert_one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr + done.stdout
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr  # progress may precede it
    for needle in needles:
        assert needle in errors[0]


def submit_demo(stack: StackState, interval: str) -> str:
    """The demo job through the CLI, as a user submits it; returns its id."""
    submitted = chronos("job", "submit", "demo", "--interval", interval, "--parallelism", "1", "--json",
                        "--stack-dir", stack.stack_dir)
    assert submitted.returncode == 0, submitted.stderr
    return str(json.loads(submitted.stdout)["job_id"])
