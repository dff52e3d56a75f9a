"""A recorded process is signalled only while its PID still holds the process that was recorded: same
kernel start time, same command line. Real processes the test starts itself (`sleep`), no fakes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chronos.errors import StackError
from chronos.stack.faults import KillTaskManager, python_workers
from chronos.stack.flink_cluster import PYTHON_WORKER_MAIN
from chronos.stack.local_stack import down
from chronos.stack.processes import ProcessRecord, adopt, check, cpu_seconds, identify, is_alive, send, spawn, stop
from chronos.stack.state import StackState, save_state
from tests.support.processes import bystanders, untouched


def test_a_process_chronos_started_is_recognised_and_stopped(tmp_path: Path) -> None:
    record = spawn(["sleep", "600"], tmp_path / "sleep.log", role="a test sleeper", argv_marks=("600",))
    assert check(record).ours
    result = stop([record], grace_seconds=5)
    assert result.stopped == (record,) and result.forced == () and result.stale == ()
    assert check(record).verdict == "gone"


def test_a_pid_that_now_holds_a_process_started_later_is_stale_and_never_signalled() -> None:
    with bystanders(1) as (other,):
        real = identify(other.pid, "this stack's JobManager", ("600",))
        reused = real.model_copy(update={"started_s": real.started_s - 3600})  # the PID's earlier life
        lines: list[str] = []
        found = check(reused)
        assert found.verdict == "stale"
        assert found.stale_line() == (f"stale entry: pid {other.pid} is now 'sleep', not this stack's JobManager; "
                                      "not touched")
        for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):
            assert send(reused, sig).verdict == "stale"
        result = stop([reused], grace_seconds=1, report=lines.append)
        assert result.stopped == () and result.stale == (found.stale_line(),) and lines == [found.stale_line()]
        assert untouched(other)


def test_the_same_start_time_with_another_command_line_is_stale() -> None:
    with bystanders(1) as (other,):
        real = identify(other.pid, "this stack's Kafka broker", ("600",))
        forged = real.model_copy(update={"argv_marks": ("kafka.Kafka", "/stack/kafka/server.properties")})
        assert check(forged).verdict == "stale"
        assert stop([forged], grace_seconds=1).stopped == ()
        assert untouched(other)


def test_a_process_that_exited_reads_gone_even_before_it_is_reaped() -> None:
    proc = subprocess.Popen(["sleep", "600"])
    record = identify(proc.pid, "a test sleeper", ("600",), exec_wait_s=5)
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10  # a zombie once the kernel delivers the kill: this process has not waited for it
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    assert check(record).verdict == "gone"
    proc.wait(5)


def test_recording_refuses_a_process_without_its_marks() -> None:
    with bystanders(1) as (other,), pytest.raises(StackError, match="not this stack's TaskManager"):
        identify(other.pid, "this stack's TaskManager", ("org.apache.flink.runtime.taskexecutor.TaskManagerRunner",))


def test_a_pid_from_a_file_is_adopted_only_if_it_started_before_the_file_was_written_and_carries_the_marks() -> None:
    with bystanders(1) as (other,):
        started = identify(other.pid, "x", ("600",))
        me = os.getuid()
        assert adopt(other.pid, "a sleeper", ("600",), started_before=time.time(), uid=me).ours
        written_before_it_started = time.time() - 3600
        assert adopt(other.pid, "a sleeper", ("600",), written_before_it_started, uid=me).verdict == "stale"
        assert adopt(other.pid, "this stack's JobManager", ("StandaloneSessionClusterEntrypoint",),
                     time.time(), uid=me).verdict == "stale"
        assert adopt(other.pid, "a sleeper", ("600",), time.time(), uid=me + 1).verdict == "stale", "another user's"
        assert started.pid == other.pid and untouched(other)


def test_cpu_time_is_read_only_for_the_recorded_process() -> None:
    with bystanders(1) as (other,):
        real = identify(other.pid, "x", ("600",))
        assert cpu_seconds(real) is not None
        assert cpu_seconds(real.model_copy(update={"started_s": real.started_s + 99})) is None


# A stand-in TaskManager: a Python process that starts a stand-in Beam worker, then waits.
STAND_IN_TASKMANAGER = ("import subprocess, sys, time; "
                        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {PYTHON_WORKER_MAIN!r}]); "
                        "time.sleep(600)")


def test_python_workers_are_the_beam_workers_below_a_taskmanager_only(tmp_path: Path) -> None:
    """A stand-in TaskManager (a Python process) starts a stand-in Beam worker; a second worker-like
    process that is no child of it does not count."""
    tm = spawn([sys.executable, "-c", STAND_IN_TASKMANAGER, "TaskManagerRunner"], tmp_path / "tm.log",
               role="a stand-in TaskManager", argv_marks=("TaskManagerRunner",))
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", PYTHON_WORKER_MAIN])
    try:
        state = StackState(stack_dir=str(tmp_path), started_at=0, kafka_port=1, kafka_controller_port=2, kafka=None,
                           flink_rest_port=3, flink_rpc_port=4, prometheus_port_base=5, jobmanager=tm,
                           taskmanagers=(tm,), slots=1, kafka_lib="", connector_jar="",
                           services_dir=str(tmp_path), service_user=None)
        deadline = time.monotonic() + 10
        while not (workers := python_workers(state)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [w.pid for w in workers] != [] and stray.pid not in [w.pid for w in workers]
        assert len(workers) == 1 and workers[0].argv_marks == (PYTHON_WORKER_MAIN,)
    finally:
        stray.kill()
        stray.wait(5)
        children = psutil.Process(tm.pid).children(recursive=True)
        stop([tm], grace_seconds=5)
        for child in children:
            child.kill()


def _stand_in_stack(tmp_path: Path) -> tuple[ProcessRecord, int]:
    """A stand-in TaskManager (a Python process) that has started a stand-in Beam worker; the state saved."""
    tm = spawn([sys.executable, "-c", STAND_IN_TASKMANAGER, "TaskManagerRunner"], tmp_path / "tm.log",
               role="this stack's TaskManager", argv_marks=("TaskManagerRunner",))
    state = StackState(stack_dir=str(tmp_path), started_at=0, kafka_port=1, kafka_controller_port=2, kafka=None,
                       flink_rest_port=3, flink_rpc_port=4, prometheus_port_base=5, jobmanager=tm,
                       taskmanagers=(tm,), slots=1, kafka_lib="", connector_jar="",
                       services_dir=str(tmp_path), service_user=None)
    save_state(state)
    deadline = time.monotonic() + 10
    while not (workers := python_workers(state)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(workers) == 1
    return tm, workers[0].pid


@pytest.mark.parametrize("end", ["stack down", "kill-taskmanager"])
def test_a_taskmanager_s_python_workers_end_with_it_instead_of_living_on_as_orphans(tmp_path: Path, end: str) -> None:
    """Left to themselves they outlive it, reparented to init (two found after a capacity bench and a profile)."""
    tm, worker = _stand_in_stack(tmp_path)
    try:
        if end == "stack down":
            down(tmp_path)
        else:
            record = KillTaskManager(tmp_path, replace=False).inject()
            assert "and its 1 Python worker(s)" in record.detail
        # Both awaited: a SIGKILL is delivered when the kernel gets to it, and in CI the worker was gone while the
        # TaskManager, killed first, had not yet ended (a wait on the worker alone read it alive).
        deadline = time.monotonic() + 10
        while (is_alive(worker) or is_alive(tm.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not is_alive(worker) and not is_alive(tm.pid)
    finally:
        for pid in (worker, tm.pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()


def test_a_start_script_s_pid_is_recorded_once_the_forked_shell_has_become_the_program() -> None:
    """flink-daemon.sh writes `$!`, a shell that execs java a moment later: recorded only once it has."""
    shell = subprocess.Popen(["bash", "-c", "sleep 0.5; exec sleep 600"])
    try:
        with pytest.raises(StackError, match="is 'bash', not a test sleeper"):
            identify(shell.pid, "a test sleeper", ("sleep", "600"))
        record = identify(shell.pid, "a test sleeper", ("sleep", "600"), exec_wait_s=10)
        assert check(record).ours
    finally:
        shell.kill()
        shell.wait(5)


def test_a_started_process_that_is_not_what_was_asked_for_is_not_left_running(tmp_path: Path) -> None:
    before = {p.pid for p in psutil.Process().children()}
    with pytest.raises(StackError, match=r"lacks 'kafka\.Kafka'"):
        spawn(["sleep", "600"], tmp_path / "x.log", role="a broker", argv_marks=("kafka.Kafka",), exec_wait_s=0.3)
    assert {p.pid for p in psutil.Process().children()} == before


def test_a_process_whose_arguments_are_not_laid_out_yet_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Popen returns before the kernel has set the new program's arguments: for that moment the command line
    reads empty. Such a process is waited for, not refused as something else."""
    import chronos.stack.processes as processes

    readings: list[list[str]] = []
    real_argv = processes._argv

    def argv_just_after_exec(proc: psutil.Process) -> list[str]:
        readings.append([] if not readings else real_argv(proc))
        return readings[-1]

    monkeypatch.setattr(processes, "_argv", argv_just_after_exec)
    with bystanders(1) as (other,):
        record = identify(other.pid, "a test sleeper", ("600",))
        assert record.pid == other.pid and readings[0] == [] and "600" in readings[-1]
