"""Faults on the local stack's processes: kill or pause a TaskManager, restart the Kafka broker.

Each updates the stack state file when it replaces a process, so `status` and `down` keep knowing
every process the stack runs; none signals a recorded PID that now holds another process.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

from chronos import bounded_http
from chronos.connection_security import RestSecurity
from chronos.errors import StackError, is_job_id
from chronos.flink.distribution import find_distribution
from chronos.model import FaultRecord
from chronos.stack import kafka_broker
from chronos.stack.flink_cluster import python_workers_of, start_taskmanager
from chronos.stack.processes import ProcessRecord, check, identify, send, stop
from chronos.stack.service_account import account_of
from chronos.stack.stack_credentials import credentials_of
from chronos.stack.state import StackState, load_state, save_state


def _now_ms() -> int:
    return int(time.time() * 1000)


def _state(stack_dir: Path) -> StackState:
    state = load_state(stack_dir)
    if state is None:
        raise StackError(f"no stack is running in {stack_dir}")
    return state


def _live_taskmanagers(state: StackState) -> list[ProcessRecord]:
    """The TaskManagers that are still the processes the stack started; refused, naming each stale
    entry, when there is none."""
    checks = [check(record) for record in state.taskmanagers]
    live = [found.record for found in checks if found.ours]
    if not live:
        stale = "; ".join(found.stale_line() for found in checks if found.verdict == "stale")
        raise StackError("no live TaskManager of this stack to break" + (f" ({stale})" if stale else ""))
    return live


def _live_taskmanager(state: StackState, index: int | None, job_id: str | None = None) -> ProcessRecord:
    """The one at `index`, or (None) the one running most of the jobs' tasks: with spare TaskManagers beside
    it, breaking an idle one would break nothing a job notices."""
    live = _live_taskmanagers(state)
    if index is not None or len(live) == 1:
        return live[(index or 0) % len(live)]
    busy = _busiest_rpc_port(state.rest_url, job_id, state.rest_security)
    if busy is None:
        return live[0]  # Flink runs no job there: any one breaks the same nothing
    for record in live:
        if busy in _listening_ports(record.pid):
            return record
    stray = _stray_taskmanager(live[0], busy)
    if stray is not None:
        return stray
    raise StackError(f"cannot tell which TaskManager runs the job: Flink says the one on port {busy}, and none of "
                     "this stack's TaskManagers (" + ", ".join(f"pid {r.pid}: {sorted(_listening_ports(r.pid))}"
                                                            for r in live) + ") listens there")


def _stray_taskmanager(known: ProcessRecord, port: int) -> ProcessRecord | None:
    """A TaskManager of this stack (its command line carries the same marks) that the stack's state lost track of,
    listening on `port`: breaking a tracked idle one instead would break nothing a job notices."""
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info.get("cmdline") or []
        if proc.pid != known.pid and all(mark in argv for mark in known.argv_marks) and port in _listening_ports(proc.pid):
            return identify(proc.pid, known.role, known.argv_marks)
    return None


def _busiest_rpc_port(rest_url: str, job_id: str | None = None, security: RestSecurity | None = None) -> int | None:
    """The RPC port (off its id, `host:port-suffix`) of the TaskManager running most of the running jobs' subtasks
    (read from where Flink deployed them), else of the one with the fewest free slots; None if Flink cannot say."""
    def _get(url: str) -> Any:
        return bounded_http.get(url, 5.0, security).json(url)

    for _ in range(3):  # a slow answer on a loaded host is asked again, not taken for "no job"
        try:
            hosted: Counter[str] = Counter()
            jobs = _get(f"{rest_url}/jobs/overview").get("jobs", [])
            for job in (j for j in jobs if j.get("state") == "RUNNING" and job_id in (None, j.get("jid"))):
                if not is_job_id(job["jid"]):
                    continue
                detail = _get(f"{rest_url}/jobs/{job['jid']}")
                for vertex in detail.get("vertices", []):
                    if not is_job_id(vertex["id"]):  # vertex ids have the form of job ids
                        continue
                    placed = _get(f"{rest_url}/jobs/{job['jid']}/vertices/{vertex['id']}/taskmanagers")
                    for tm in placed.get("taskmanagers", []):
                        hosted[str(tm["taskmanager-id"])] += sum(int(v) for v in tm.get("status-counts", {}).values())
            if hosted:
                busiest = hosted.most_common(1)[0][0]
            else:
                reply = _get(f"{rest_url}/taskmanagers")
                busiest = str(min(reply.get("taskmanagers", []), key=lambda tm: int(tm.get("freeSlots", 0)))["id"])
            return int(busiest.rsplit(":", 1)[1].split("-", 1)[0])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError, AttributeError):
            time.sleep(1.0)
    return None


def _listening_ports(pid: int) -> set[int]:
    try:
        return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN}
    except psutil.Error:
        return set()


def _signal(record: ProcessRecord, sig: signal.Signals, what: str) -> None:
    found = send(record, sig)
    if found.verdict == "stale":
        raise StackError(f"{what}: {found.stale_line()}")
    if found.verdict == "gone":
        raise StackError(f"{what}: pid {record.pid} ({record.role}) is gone")


class KillTaskManager:
    """SIGKILL a TaskManager (a machine loss); with `replace`, start a new one right away, as a
    cluster manager would."""

    def __init__(self, stack_dir: Path, index: int | None = None, replace: bool = True,
                 wall_ms: Callable[[], int] = _now_ms, job_id: str | None = None) -> None:
        self._stack_dir = stack_dir
        self._job_id = job_id  # the job whose TaskManager to break, when spares run beside it
        self._index = index
        self._replace = replace
        self._wall_ms = wall_ms

    def inject(self) -> FaultRecord:
        state = _state(self._stack_dir)
        victim = _live_taskmanager(state, self._index, self._job_id)
        workers = python_workers_of(victim)  # they go down with their machine, not linger on as orphans
        wall, mono = self._wall_ms(), time.monotonic()
        _signal(victim, signal.SIGKILL, "cannot kill the TaskManager")
        for worker in workers:
            send(worker, signal.SIGKILL)
        detail = f"killed pid {victim.pid}" + (f" and its {len(workers)} Python worker(s)" if workers else "")
        survivors = tuple(record for record in state.taskmanagers if record.pid != victim.pid)
        if self._replace:
            new = start_taskmanager(find_distribution(), state.flink_home, account_of(Path(state.services_dir)),
                                    state.niceness)
            survivors += (new,)
            detail += f", started pid {new.pid}"
        save_state(state.model_copy(update={"taskmanagers": survivors}))
        return FaultRecord("kill-taskmanager", f"pid {victim.pid}", wall, mono, detail)

    def rollback(self) -> None:
        """Bring the TaskManager count back to what the stack was started with."""
        state = _state(self._stack_dir)
        live = tuple(record for record in state.taskmanagers if check(record).ours)
        if not live:
            live = (start_taskmanager(find_distribution(), state.flink_home, account_of(Path(state.services_dir)),
                                      state.niceness),)
        save_state(state.model_copy(update={"taskmanagers": live}))


class PauseTaskManager:
    """SIGSTOP a TaskManager for `seconds` (a hung process: only the heartbeat timeout notices), then
    SIGCONT. `inject` returns after resuming; `rollback` resumes it if anything interrupted that."""

    def __init__(self, stack_dir: Path, seconds: float, index: int | None = None, sleep: Callable[[float], None] = time.sleep,
                 wall_ms: Callable[[], int] = _now_ms) -> None:
        self._stack_dir = stack_dir
        self._seconds = seconds
        self._index = index
        self._sleep = sleep
        self._wall_ms = wall_ms
        self._paused: ProcessRecord | None = None

    def inject(self) -> FaultRecord:
        victim = _live_taskmanager(_state(self._stack_dir), self._index)
        wall, mono = self._wall_ms(), time.monotonic()
        _signal(victim, signal.SIGSTOP, "cannot pause the TaskManager")
        self._paused = victim
        try:
            self._sleep(self._seconds)
        finally:
            self.rollback()
        return FaultRecord("pause-taskmanager", f"pid {victim.pid}", wall, mono, f"paused {self._seconds:g} s")

    def rollback(self) -> None:
        if self._paused is not None:
            send(self._paused, signal.SIGCONT)
        self._paused = None


def python_workers(state: StackState) -> list[ProcessRecord]:
    """The Python UDF workers the TaskManagers launched (pyflink's Beam worker processes)."""
    return [worker for tm in state.taskmanagers for worker in python_workers_of(tm)]


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
        _signal(victim, signal.SIGKILL, "cannot kill the Python worker")
        return FaultRecord("kill-python-worker", f"pid {victim.pid}", wall, mono,
                           f"killed pid {victim.pid} of {len(workers)}")

    def rollback(self) -> None:
        """Nothing to undo: Flink starts a new worker with the restarted task."""


class RestartKafka:
    """Stop the broker (SIGTERM, then SIGKILL) and start it again on the same port and data, after `down_s`
    (an outage as long as the caller needs, however fast this machine restarts a broker)."""

    def __init__(self, stack_dir: Path, wall_ms: Callable[[], int] = _now_ms, down_s: float = 0.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._stack_dir = stack_dir
        self._wall_ms = wall_ms
        self._down_s, self._sleep = down_s, sleep

    def inject(self) -> FaultRecord:
        state = _state(self._stack_dir)
        if state.kafka is None:
            raise StackError(f"the stack in {self._stack_dir} shares another stack's broker: restart that one")
        found = check(state.kafka)
        if found.verdict == "stale":
            raise StackError(f"cannot restart Kafka: {found.stale_line()}")
        wall, mono = self._wall_ms(), time.monotonic()
        stop([state.kafka], grace_seconds=30)
        self._sleep(self._down_s)
        self._start(state)
        return FaultRecord("restart-kafka", f"pid {state.kafka.pid}", wall, mono,
                           f"restarted as pid {_state(self._stack_dir).kafka_pid}")

    def _start(self, state: StackState) -> None:
        secured = credentials_of(Path(state.services_dir)) if state.kafka_security is not None else None
        record = kafka_broker.start_broker(Path(state.kafka_lib), state.kafka_home, state.kafka_port,
                                           state.kafka_controller_port, account_of(Path(state.services_dir)),
                                           credentials=secured)
        save_state(state.model_copy(update={"kafka": record}))
        kafka_broker.wait_ready(state.bootstrap, record, security=state.kafka_client)

    def rollback(self) -> None:
        state = _state(self._stack_dir)
        if state.kafka is not None and check(state.kafka).verdict == "gone":
            self._start(state)


def resume_taskmanagers(stack_dir: Path) -> list[int]:
    """SIGCONT every TaskManager of the stack (a rollback for pauses); returns the PIDs resumed."""
    state = _state(stack_dir)
    return [record.pid for record in state.taskmanagers if send(record, signal.SIGCONT).ours]
