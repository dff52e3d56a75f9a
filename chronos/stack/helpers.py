"""Background helpers the stack manages besides its services (load generator, latency observer):
one PID file each in the stack directory, so `down` stops them too."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from chronos.stack.processes import is_alive, spawn, terminate


def helper_dir(stack_dir: Path) -> Path:
    return stack_dir / "helpers"


def start_helper(stack_dir: Path, name: str, chronos_args: Sequence[str]) -> int:
    """Run `chronos <args>` detached, logging to helpers/<name>.log; refuses a second live copy."""
    directory = helper_dir(stack_dir)
    directory.mkdir(parents=True, exist_ok=True)
    pid_file = directory / f"{name}.pid"
    if pid_file.exists():
        old = int(pid_file.read_text().strip() or 0)
        if old and is_alive(old):
            return old
    argv = [sys.executable, "-m", "chronos.cli.main", *chronos_args]
    pid = spawn(argv, directory / f"{name}.log")
    pid_file.write_text(str(pid))
    return pid


def live_helpers(stack_dir: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for pid_file in sorted(helper_dir(stack_dir).glob("*.pid")):
        text = pid_file.read_text().strip()
        if text.isdigit() and is_alive(int(text)):
            found[pid_file.stem] = int(text)
    return found


def stop_helper(stack_dir: Path, name: str) -> bool:
    pid_file = helper_dir(stack_dir) / f"{name}.pid"
    if not pid_file.exists():
        return False
    text = pid_file.read_text().strip()
    stopped = False
    if text.isdigit() and is_alive(int(text)):
        terminate([int(text)], grace_seconds=10)
        stopped = True
    pid_file.unlink(missing_ok=True)
    return stopped


def stop_all_helpers(stack_dir: Path) -> list[str]:
    return [p.stem for p in sorted(helper_dir(stack_dir).glob("*.pid")) if stop_helper(stack_dir, p.stem)]
