"""Starting and stopping the stack's processes by PID, so `down` can prove nothing survives."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def is_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def spawn(
    argv: Sequence[str], log_file: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> int:
    """Start a detached child (own session, output to `log_file`) and return its PID."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    return proc.pid


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def terminate(pids: Sequence[int], grace_seconds: float = 20.0) -> list[int]:
    """SIGTERM every live PID, wait up to `grace_seconds`, then SIGKILL the rest.

    Returns the PIDs that had to be killed forcefully.
    """
    live = [pid for pid in pids if is_alive(pid)]
    for pid in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        for pid in live:
            _reap(pid)
        if not any(is_alive(pid) for pid in live):
            return []
        time.sleep(0.2)
    killed = []
    for pid in live:
        if is_alive(pid):
            killed.append(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        for pid in killed:
            _reap(pid)
        if not any(is_alive(pid) for pid in killed):
            break
        time.sleep(0.1)
    return killed
