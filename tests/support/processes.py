"""Processes a test starts itself (stand-ins whose PIDs a stale state file names), and a scan for
anything of a stack left running: by its directory on a command line, not by the PIDs it recorded."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from chronos.stack.service_account import service_account


@contextlib.contextmanager
def bystanders(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` sleeping processes that belong to no stack; killed at the end whatever happened."""
    procs = [subprocess.Popen(["sleep", "600"], start_new_session=True) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(10)


def untouched(proc: subprocess.Popen[bytes]) -> bool:
    """Still running and not stopped: neither killed, terminated nor paused."""
    if proc.poll() is not None:
        return False
    return bool(psutil.Process(proc.pid).status() != psutil.STATUS_STOPPED)


def paused(proc: subprocess.Popen[bytes], timeout_s: float = 2.0) -> bool:
    """True once the process reads as stopped (SIGSTOP is delivered asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED:
            return True
        time.sleep(0.01)
    return False


def leftovers(stack_dir: Path) -> list[str]:
    """Every live process whose command line names `stack_dir` or its services' directory (config, logs,
    data): what `stack down` must have stopped, whoever started it."""
    needles = {str(stack_dir.resolve()), str(service_account().services_dir(stack_dir))}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            argv = " ".join(proc.info["cmdline"] or ())
            if proc.info["status"] != psutil.STATUS_ZOMBIE and any(needle in argv for needle in needles):
                found.append(f"{proc.info['pid']}: {' '.join(proc.info['cmdline'])}")
    return found
