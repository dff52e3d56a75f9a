"""Background helpers the stack manages besides its services (load generator, latency observer):
one record each in the stack directory (`helpers/<name>.pid.json`: PID, kernel start time, what it was
started as), so `down` stops them too, and never something else that holds their PID later. A record is
believed only while it is chronos's own (chronos.input_files.require_private)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chronos.errors import InvalidInput
from chronos.input_files import read_own_model, write_private
from chronos.stack.processes import ProcessRecord, Report, check, spawn, stop

HELPER_MAIN = "chronos.cli.main"
HELPER_LOG_ENV = "CHRONOS_LOG_FILE"  # read by the CLI's entry point (chronos.cli.rotating_output)


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class HelperScan:
    running: dict[str, int] = field(default_factory=dict)  # name -> PID of the helpers that still run
    stale: tuple[str, ...] = ()  # one line per record whose PID now holds another process


@dataclass(frozen=True)
class HelpersStopped:
    stopped: tuple[str, ...]
    stale: tuple[str, ...]


def helper_dir(stack_dir: Path) -> Path:
    return stack_dir / "helpers"


RECORD_SUFFIX = ".pid.json"


def _record_file(stack_dir: Path, name: str) -> Path:
    return helper_dir(stack_dir) / f"{name}{RECORD_SUFFIX}"


def _records(stack_dir: Path) -> list[tuple[str, Path]]:
    return [(path.name.removesuffix(RECORD_SUFFIX), path) for path in sorted(helper_dir(stack_dir).glob(f"*{RECORD_SUFFIX}"))]


def _read(path: Path) -> ProcessRecord | None:
    try:
        return read_own_model(path, ProcessRecord, "helper record")
    except InvalidInput:
        return None


def _forget(path: Path) -> None:
    """Remove a record file, from a folder that is chronos's user's own only."""
    with contextlib.suppress(OSError):
        if path.parent.stat().st_uid == os.geteuid():
            path.unlink(missing_ok=True)


def start_helper(stack_dir: Path, name: str, chronos_args: Sequence[str]) -> int:
    """Run `chronos <args>` detached, logging to helpers/<name>.log; refuses a second live copy."""
    directory = helper_dir(stack_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = _record_file(stack_dir, name)
    old = _read(path) if path.exists() else None
    if old is not None and check(old).ours:
        return old.pid
    argv = [sys.executable, "-m", HELPER_MAIN, *chronos_args]
    # Its output goes to <name>.log, rolled over by size by the helper itself; what Python says before
    # chronos starts (an import error) lands in <name>.start.log.
    env = {**os.environ, HELPER_LOG_ENV: str(directory / f"{name}.log")}
    record = spawn(argv, directory / f"{name}.start.log", role=f"this stack's {name} helper",
                   argv_marks=(HELPER_MAIN, *chronos_args[:2]), env=env)
    write_private(path, record.model_dump_json())
    return record.pid


def live_helpers(stack_dir: Path) -> HelperScan:
    running: dict[str, int] = {}
    stale: list[str] = []
    for name, path in _records(stack_dir):
        record = _read(path)
        if record is None:
            continue
        found = check(record)
        if found.ours:
            running[name] = record.pid
        elif found.verdict == "stale":
            stale.append(found.stale_line())
    return HelperScan(running, tuple(stale))


def stop_helper(stack_dir: Path, name: str, report: Report = _quiet) -> bool:
    """Stop the helper if it still runs; True if it did. A stale record is said, not signalled."""
    path = _record_file(stack_dir, name)
    record = _read(path) if path.exists() else None
    if record is None:
        _forget(path)
        return False
    result = stop([record], grace_seconds=10, report=report)
    _forget(path)
    return bool(result.stopped)


def stop_all_helpers(stack_dir: Path, report: Report = _quiet) -> HelpersStopped:
    stopped: list[str] = []
    stale: list[str] = []

    def collect(line: str) -> None:
        stale.append(line)
        report(line)

    for name, _ in _records(stack_dir):
        if stop_helper(stack_dir, name, collect):
            stopped.append(name)
    return HelpersStopped(tuple(stopped), tuple(stale))
