"""The processes chronos starts, known by more than their PID.

A PID is a number the kernel hands out again: after a crash or a reboot the PID in a state file can
belong to anything (sshd, a database), and chronos often runs as root. So a bare PID is never signalled.
Every process chronos starts is recorded with what identifies it for good: its start time as the kernel
reports it (clock ticks since boot, fixed for the life of a process: psutil's create time less its boot
time, so a wall-clock step changes neither) and what it was started as (argv elements it must still
carry: a Flink entry class, the stack's config path) and the user it runs as. Before any signal, the
process that holds the PID must match its record; otherwise the entry is stale, said in one line, and left
alone. A record with nothing to match (no argv marks, an empty mark) is refused when it is read: an empty
identity matched a stranger's `sleep` by its start time alone once, and root killed it.
psutil reads the process table and sends the signals; it compares the start time once more itself at
`send_signal`, which closes the gap between the check here and the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

from chronos.errors import StackError
from chronos.model import RunAs

# Kernel start times are clock ticks (1/100 s); the difference of two epoch floats is exact to far better.
START_TIME_SLACK_S = 0.005
# A PID found in a file written after the process started (Flink's own pid files): the file's mtime is
# whole-second on some filesystems, and the script writes the PID a moment after the fork.
FILE_WRITTEN_SLACK_S = 2.0

# How long a just-started process may take to show the argv it was started with (see `identify`).
EXEC_WAIT_S = 15.0
PID_MAX = 4_194_304  # Linux's largest pid_max
# Popen returns once exec has closed the close-on-exec pipe, before the kernel has laid out the new
# program's arguments (load_elf_binary sets them after begin_new_exec): for that moment the process already
# has its new name but an empty command line. A fresh process with no arguments yet is given this long.
ARGS_LAID_OUT_WITHIN_S = 2.0
Mark = Annotated[str, Field(min_length=1, max_length=4096)]

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class ProcessRecord(BaseModel):
    """What chronos knows of a process it started (or adopted with proof): enough to tell it from
    whatever holds its PID later."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    pid: int = Field(gt=1, le=PID_MAX)  # never 0, -1 (kill(2)'s groups) or init
    role: str = Field(min_length=1, max_length=200)  # what it is to a reader: "this stack's JobManager"
    argv_marks: tuple[Mark, ...] = Field(min_length=1)  # argv elements it was started with and must still carry
    started_s: float  # kernel start time, seconds since boot
    uid: int | None = Field(default=None, ge=0)  # the real user it runs as (None: recorded before chronos kept it)


Verdict = Literal["ours", "gone", "stale"]


@dataclass(frozen=True)
class Check:
    """What holds a recorded PID now."""

    record: ProcessRecord
    verdict: Verdict
    holder: str = ""  # stale: the name of the process that holds the PID now

    @property
    def ours(self) -> bool:
        return self.verdict == "ours"

    def stale_line(self) -> str:
        return f"stale entry: pid {self.record.pid} is now {self.holder!r}, not {self.record.role}; not touched"


def _started_s(proc: psutil.Process) -> float:
    """The kernel's start time of the process in seconds since boot (psutil adds the boot time to the
    kernel's clock ticks; taking it off again leaves a figure no clock adjustment moves)."""
    return float(proc.create_time() - psutil.boot_time())


def _argv(proc: psutil.Process) -> list[str]:
    return list(proc.cmdline())


def _zombie(proc: psutil.Process) -> bool:
    return bool(proc.status() == psutil.STATUS_ZOMBIE)


def _match(record: ProcessRecord) -> tuple[Check, psutil.Process | None]:
    try:
        proc = psutil.Process(record.pid)
        if _zombie(proc):
            _reap(record.pid)
            return Check(record, "gone"), None
        same_start = abs(_started_s(proc) - record.started_s) <= START_TIME_SLACK_S
        argv = _argv(proc)
        same_user = record.uid is None or proc.uids().real == record.uid
        if same_start and same_user and record.argv_marks and all(mark in argv for mark in record.argv_marks):
            return Check(record, "ours"), proc
        return Check(record, "stale", proc.name()), None
    except psutil.NoSuchProcess:
        return Check(record, "gone"), None
    except psutil.AccessDenied:
        return Check(record, "stale", "a process chronos may not inspect"), None


def check(record: ProcessRecord) -> Check:
    """Whether the PID still holds the process this record was made for."""
    return _match(record)[0]


def running(record: ProcessRecord) -> bool:
    return check(record).ours


def identify(pid: int, role: str, argv_marks: Sequence[str], exec_wait_s: float = 0.0) -> ProcessRecord:
    """Record a process chronos has just started (its PID from Popen or from the pid file its start
    script wrote): refused if it exited or does not carry `argv_marks`. A start script writes the PID of
    a forked shell that is about to exec the program: `exec_wait_s` is how long to wait for that exec
    (the start time does not change with it)."""
    started = time.monotonic()
    deadline = started + exec_wait_s
    try:
        proc = psutil.Process(pid)
        while True:
            if _zombie(proc):
                raise StackError(f"{role} (pid {pid}) exited right after it started; see its log")
            argv = _argv(proc)
            missing = [mark for mark in argv_marks if mark not in argv]
            if not missing:
                return ProcessRecord(pid=pid, role=role, argv_marks=tuple(argv_marks), started_s=_started_s(proc),
                                     uid=proc.uids().real)
            now = time.monotonic()
            if now >= deadline and (argv or now >= started + ARGS_LAID_OUT_WITHIN_S):
                raise StackError(f"pid {pid} is {proc.name()!r}, not {role}: its command line lacks {missing[0]!r}")
            time.sleep(0.05)
    except psutil.NoSuchProcess as exc:
        raise StackError(f"{role} (pid {pid}) exited right after it started; see its log") from exc
    except psutil.AccessDenied as exc:
        raise StackError(f"pid {pid} cannot be inspected; it is not {role} chronos started") from exc


def adopt(pid: int, role: str, argv_marks: Sequence[str], started_before: float, uid: int) -> Check:
    """A PID from a file chronos did not write (Flink's own pid files, which the service user can write): it is
    taken as `role` only if its process runs as `uid` (the services' user), carries `argv_marks` (at least
    one) and started no later than the file was written (`started_before`, seconds since the epoch). A
    process started after that (a PID reused since a reboot), as another user or as anything else is stale."""
    if not argv_marks or not all(argv_marks) or not 1 < pid <= PID_MAX:
        raise ValueError("adopt needs a pid and argv marks to match")
    placeholder = ProcessRecord(pid=pid, role=role, argv_marks=tuple(argv_marks), started_s=0.0, uid=uid)
    try:
        proc = psutil.Process(pid)
        if _zombie(proc):
            _reap(pid)
            return Check(placeholder, "gone")
        argv = _argv(proc)
        # Ages, not epoch times: the process's from the kernel's boot clock (no wall-clock step or boot-time
        # rounding moves it), the file's from the wall clock it was stamped with.
        process_age_s = time.clock_gettime(time.CLOCK_BOOTTIME) - _started_s(proc)
        file_age_s = time.time() - started_before
        if (process_age_s + FILE_WRITTEN_SLACK_S < file_age_s or any(m not in argv for m in argv_marks)
                or proc.uids().real != uid):
            return Check(placeholder, "stale", proc.name())
        record = ProcessRecord(pid=pid, role=role, argv_marks=tuple(argv_marks), started_s=_started_s(proc), uid=uid)
        return Check(record, "ours")
    except psutil.NoSuchProcess:
        return Check(placeholder, "gone")
    except psutil.AccessDenied:
        return Check(placeholder, "stale", "a process chronos may not inspect")


def send(record: ProcessRecord, sig: signal.Signals) -> Check:
    """Send `sig` only if the PID still holds the recorded process; the check says what happened."""
    found, proc = _match(record)
    if proc is None:
        return found
    try:
        proc.send_signal(sig)
    except psutil.NoSuchProcess:
        return Check(record, "gone")
    except psutil.AccessDenied:
        return Check(record, "stale", "a process chronos may not signal")
    return found


def is_alive(pid: int) -> bool:
    """True if some process (not a zombie) holds `pid`. For looking only: never a reason to signal it."""
    try:
        return not _zombie(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _reap(pid: int) -> None:
    """Collect the exit status of a child of this process (a zombie otherwise reads as alive to kill(0))."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def spawn(argv: Sequence[str], log_file: Path | int, role: str, argv_marks: Sequence[str],
          env: Mapping[str, str] | None = None, cwd: Path | None = None, exec_wait_s: float = EXEC_WAIT_S,
          run_as: RunAs | None = None) -> ProcessRecord:
    """Start a detached child (own session, output to `log_file`, as `run_as` if given) and record it. `log_file`:
    a path of chronos's own, or a descriptor opened for appending (a file in the services' directory, opened
    through chronos.stack.service_tree, never by its path as root); spawn closes it."""
    if isinstance(log_file, Path):
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            **(run_as.popen_kwargs() if run_as is not None else {}),
        )
    # Popen returns once the exec has begun (its close-on-exec pipe closed), which is before the kernel
    # has set up the new argv: for a moment /proc/<pid>/cmdline reads empty (seen with prometheus).
    try:
        return identify(proc.pid, role, argv_marks, exec_wait_s)
    except BaseException:
        proc.kill()  # our own child, known by its Popen handle: never left running unrecorded
        proc.wait(10)
        raise


@dataclass(frozen=True)
class StopReport:
    stopped: tuple[ProcessRecord, ...]  # were running and are gone now
    forced: tuple[ProcessRecord, ...]  # of those, the ones that needed SIGKILL
    stale: tuple[str, ...]  # one line each: PIDs that hold something else now, left alone


def stop(records: Iterable[ProcessRecord], grace_seconds: float = 20.0, report: Report = _quiet) -> StopReport:
    """SIGTERM every recorded process that is still the one recorded, wait up to `grace_seconds`, then
    SIGKILL the rest. A stale entry is said through `report` and never signalled."""
    live: list[tuple[ProcessRecord, psutil.Process]] = []
    stale: list[str] = []
    seen: set[int] = set()
    for record in records:
        if record.pid in seen:
            continue
        seen.add(record.pid)
        found, proc = _match(record)
        if found.verdict == "stale":
            stale.append(found.stale_line())
            report(found.stale_line())
        elif proc is not None:
            live.append((record, proc))
    for _, proc in live:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs([proc for _, proc in live], timeout=grace_seconds)
    forced = [record for record, proc in live if proc in alive]
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGKILL)
    psutil.wait_procs(alive, timeout=5)
    return StopReport(tuple(record for record, _ in live), tuple(forced), tuple(stale))


def descendants(record: ProcessRecord, mark: str, role: str) -> list[ProcessRecord]:
    """The processes below the recorded one whose argv carries `mark` (e.g. the Python UDF workers of a
    TaskManager), recorded as `role`; none if the record is stale or gone."""
    _, proc = _match(record)
    if proc is None:
        return []
    found = []
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in proc.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                if mark in _argv(child) and not _zombie(child):
                    found.append(ProcessRecord(pid=child.pid, role=role, argv_marks=(mark,),
                                               started_s=_started_s(child), uid=child.uids().real))
    return found


def cpu_seconds(record: ProcessRecord) -> float | None:
    """User + system CPU seconds of the recorded process, if it is still the one recorded."""
    _, proc = _match(record)
    if proc is None:
        return None
    try:
        times = proc.cpu_times()
    except psutil.NoSuchProcess:
        return None
    return float(times.user + times.system)
