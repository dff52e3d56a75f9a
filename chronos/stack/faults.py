"""Faults on the local stack's processes: kill or pause a TaskManager, restart the Kafka broker.

Each updates the stack state file when it replaces a process, so `status` and `down` keep knowing
every PID the stack runs.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from chronos.errors import StackError
from chronos.flink.distribution import find_distribution
from chronos.model import FaultRecord
from chronos.stack import kafka_broker
from chronos.stack.flink_cluster import start_taskmanager
from chronos.stack.processes import is_alive, terminate
from chronos.stack.state import StackState, load_state, save_state


def _now_ms() -> int:
    return int(time.time() * 1000)


def _state(stack_dir: Path) -> StackState:
    state = load_state(stack_dir)
    if state is None:
        raise StackError(f"no stack is running in {stack_dir}")
    return state


def _live_taskmanager(state: StackState, index: int) -> int:
    live = [pid for pid in state.taskmanager_pids if is_alive(pid)]
    if not live:
        raise StackError("no live TaskManager to break")
    return live[index % len(live)]


class KillTaskManager:
    """SIGKILL a TaskManager (a machine loss); with `replace`, start a new one right away, as a
    cluster manager would."""

    def __init__(self, stack_dir: Path, index: int = 0, replace: bool = True,
                 wall_ms: Callable[[], int] = _now_ms) -> None:
        self._stack_dir = stack_dir
        self._index = index
        self._replace = replace
        self._wall_ms = wall_ms

    def inject(self) -> FaultRecord:
        state = _state(self._stack_dir)
        victim = _live_taskmanager(state, self._index)
        wall, mono = self._wall_ms(), time.monotonic()
        os.kill(victim, signal.SIGKILL)
        detail = f"killed pid {victim}"
        survivors = tuple(pid for pid in state.taskmanager_pids if pid != victim)
        if self._replace:
            new = start_taskmanager(find_distribution(), Path(state.stack_dir) / "flink")
            survivors += (new,)
            detail += f", started pid {new}"
        save_state(state.model_copy(update={"taskmanager_pids": survivors}))
        return FaultRecord("kill-taskmanager", f"pid {victim}", wall, mono, detail)

    def rollback(self) -> None:
        """Bring the TaskManager count back to what the stack was started with."""
        state = _state(self._stack_dir)
        live = tuple(pid for pid in state.taskmanager_pids if is_alive(pid))
        if not live:
            live = (start_taskmanager(find_distribution(), Path(state.stack_dir) / "flink"),)
        save_state(state.model_copy(update={"taskmanager_pids": live}))


class PauseTaskManager:
    """SIGSTOP a TaskManager for `seconds` (a hung process: only the heartbeat timeout notices), then
    SIGCONT. `inject` returns after resuming; `rollback` resumes it if anything interrupted that."""

    def __init__(self, stack_dir: Path, seconds: float, index: int = 0, sleep: Callable[[float], None] = time.sleep,
                 wall_ms: Callable[[], int] = _now_ms) -> None:
        self._stack_dir = stack_dir
        self._seconds = seconds
        self._index = index
        self._sleep = sleep
        self._wall_ms = wall_ms
        self._paused: int | None = None

    def inject(self) -> FaultRecord:
        victim = _live_taskmanager(_state(self._stack_dir), self._index)
        wall, mono = self._wall_ms(), time.monotonic()
        os.kill(victim, signal.SIGSTOP)
        self._paused = victim
        try:
            self._sleep(self._seconds)
        finally:
            self.rollback()
        return FaultRecord("pause-taskmanager", f"pid {victim}", wall, mono, f"paused {self._seconds:g} s")

    def rollback(self) -> None:
        if self._paused is not None and is_alive(self._paused):
            os.kill(self._paused, signal.SIGCONT)
        self._paused = None


def _children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every descendant of `pid`, from the parent ids in /proc/*/stat."""
    parents: dict[int, int] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        kids = [child for child, parent in parents.items() if parent == current]
        found.extend(kids)
        frontier.extend(kids)
    return found


def python_workers(state: StackState, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of the Python UDF workers the TaskManagers launched (pyflink's Beam worker processes)."""
    workers = []
    for tm in state.taskmanager_pids:
        for pid in _children(tm, proc):
            try:
                argv = (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if b"python" in argv and b"pyflink" in argv and b"beam" in argv:
                workers.append(pid)
    return workers


class KillPythonWorker:
    """SIGKILL a Python UDF worker of a TaskManager: the task fails and Flink restarts it from the last
    checkpoint, with a fresh worker, while the TaskManager lives on."""

    def __init__(self, stack_dir: Path, wall_ms: Callable[[], int] = _now_ms) -> None:
        self._stack_dir = stack_dir
        self._wall_ms = wall_ms

    def inject(self) -> FaultRecord:
        workers = python_workers(_state(self._stack_dir))
        if not workers:
            raise StackError("no Python worker is running: the job has no Python UDFs (SQL without UDFs runs in the JVM)")
        victim = workers[0]
        wall, mono = self._wall_ms(), time.monotonic()
        os.kill(victim, signal.SIGKILL)
        return FaultRecord("kill-python-worker", f"pid {victim}", wall, mono, f"killed pid {victim} of {len(workers)}")

    def rollback(self) -> None:
        """Nothing to undo: Flink starts a new worker with the restarted task."""


class RestartKafka:
    """Stop the broker (SIGTERM, then SIGKILL) and start it again on the same port and data."""

    def __init__(self, stack_dir: Path, wall_ms: Callable[[], int] = _now_ms) -> None:
        self._stack_dir = stack_dir
        self._wall_ms = wall_ms

    def inject(self) -> FaultRecord:
        state = _state(self._stack_dir)
        if state.kafka_pid is None:
            raise StackError(f"the stack in {self._stack_dir} shares another stack's broker: restart that one")
        wall, mono = self._wall_ms(), time.monotonic()
        terminate([state.kafka_pid], grace_seconds=30)
        self._start(state)
        return FaultRecord("restart-kafka", f"pid {state.kafka_pid}", wall, mono,
                           f"restarted as pid {_state(self._stack_dir).kafka_pid}")

    def _start(self, state: StackState) -> None:
        pid = kafka_broker.start_broker(Path(state.kafka_lib), Path(state.stack_dir) / "kafka",
                                        state.kafka_port, state.kafka_controller_port)
        save_state(state.model_copy(update={"kafka_pid": pid}))
        kafka_broker.wait_ready(state.bootstrap, pid)

    def rollback(self) -> None:
        state = _state(self._stack_dir)
        if state.kafka_pid is not None and not is_alive(state.kafka_pid):
            self._start(state)


def resume_taskmanagers(stack_dir: Path) -> list[int]:
    """SIGCONT every TaskManager of the stack (a rollback for pauses); returns the PIDs resumed."""
    state = _state(stack_dir)
    live = [pid for pid in state.taskmanager_pids if is_alive(pid)]
    for pid in live:
        os.kill(pid, signal.SIGCONT)
    return live
