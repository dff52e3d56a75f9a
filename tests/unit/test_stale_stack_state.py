"""A stack state file left by a crash or a reboot, whose PIDs now belong to processes chronos did not
start (here: `sleep`s the test started itself). Nothing chronos does to a stack signals them: `stack
down`, `stack status`, `load stop`, `observe stop`, the TaskManager faults; each says the entry is
stale, and exits as it would for a stopped stack."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chronos.errors import StackError
from chronos.stack.faults import KillPythonWorker, KillTaskManager, PauseTaskManager, RestartKafka, resume_taskmanagers
from chronos.stack.helpers import live_helpers, stop_helper
from chronos.stack.local_stack import down, status
from chronos.stack.processes import ProcessRecord, identify
from chronos.stack.state import KAFKA_MAIN, STATE_FILE, StackState, load_state, save_state
from tests.support.cli import assert_one_line_error, chronos
from tests.support.processes import bystanders, paused, untouched


def _record(proc: subprocess.Popen[bytes], role: str, marks: tuple[str, ...] = ("600",),
            shift_s: float = 0.0) -> ProcessRecord:
    real = identify(proc.pid, role, ("600",))
    return real.model_copy(update={"argv_marks": marks, "started_s": real.started_s + shift_s})


@dataclass
class StaleStack:
    stack_dir: Path
    bystanders: list[subprocess.Popen[bytes]]

    @property
    def taskmanager(self) -> subprocess.Popen[bytes]:
        return self.bystanders[2]

    def line(self, proc: subprocess.Popen[bytes], role: str) -> str:
        return f"stale entry: pid {proc.pid} is now 'sleep', not {role}; not touched"

    def all_untouched(self) -> bool:
        return all(untouched(p) for p in self.bystanders)


@pytest.fixture()
def stale_stack(tmp_path: Path) -> Iterator[StaleStack]:
    """Kafka's PID holds a process started at the recorded time but as something else; the
    JobManager's and TaskManager's PIDs were reused (other start times); Flink's own pid file and both
    helper records name more bystanders."""
    stack_dir = tmp_path / "stack"
    stack_dir.mkdir()
    with bystanders(6) as procs:
        kafka, jm, tm, flink_pid_file, load, observe = procs
        save_state(StackState(
            stack_dir=str(stack_dir), started_at=0, kafka_port=1, kafka_controller_port=2,
            kafka=_record(kafka, "this stack's Kafka broker", (KAFKA_MAIN, str(stack_dir / "kafka/server.properties"))),
            flink_rest_port=3, flink_rpc_port=4, prometheus_port_base=5,
            jobmanager=_record(jm, "this stack's JobManager", shift_s=-3600.0),
            taskmanagers=(_record(tm, "this stack's TaskManager", shift_s=+42.0),),
            slots=1, kafka_lib="", connector_jar="", services_dir=str(stack_dir), service_user=None,
        ))
        (stack_dir / "flink" / "pid").mkdir(parents=True)
        (stack_dir / "flink" / "pid" / "flink-root-standalonesession.pid").write_text(f"{flink_pid_file.pid}\n")
        helpers = stack_dir / "helpers"
        helpers.mkdir()
        (helpers / "load.pid.json").write_text(_record(load, "this stack's load helper", shift_s=-1.0).model_dump_json())
        (helpers / "observe.pid.json").write_text(
            _record(observe, "this stack's observe helper", ("chronos.cli.main", "observe", "run")).model_dump_json())
        yield StaleStack(stack_dir, procs)


def test_down_signals_none_of_them_says_each_and_clears_the_state(stale_stack: StaleStack) -> None:
    kafka, jm, tm, flink_pid_file, load, observe = stale_stack.bystanders
    result = down(stale_stack.stack_dir)
    assert result.stopped == ()
    assert sorted(result.stale) == sorted([
        stale_stack.line(kafka, "this stack's Kafka broker"), stale_stack.line(jm, "this stack's JobManager"),
        stale_stack.line(tm, "this stack's TaskManager"), stale_stack.line(flink_pid_file, "this stack's JobManager"),
        stale_stack.line(load, "this stack's load helper"), stale_stack.line(observe, "this stack's observe helper"),
    ])
    assert stale_stack.all_untouched()
    assert load_state(stale_stack.stack_dir) is None


def test_status_reads_a_stopped_stack_and_names_each_stale_entry(stale_stack: StaleStack) -> None:
    st = status(stale_stack.stack_dir)
    assert st.health == "stopped" and st.helpers == ()
    assert not any(c.alive for c in st.components if c.name != "kafka" or c.pid)
    assert stale_stack.line(stale_stack.bystanders[1], "this stack's JobManager") in st.stale
    assert len(st.stale) == 5  # Kafka, JobManager, TaskManager, two helpers (status reads no pid files)
    assert stale_stack.all_untouched()


def test_helpers_are_neither_listed_nor_stopped(stale_stack: StaleStack) -> None:
    said: list[str] = []
    assert live_helpers(stale_stack.stack_dir).running == {}
    assert stop_helper(stale_stack.stack_dir, "load", said.append) is False
    assert stop_helper(stale_stack.stack_dir, "observe", said.append) is False
    assert len(said) == 2 and all(line.startswith("stale entry: pid ") for line in said)
    assert stale_stack.all_untouched()


def test_the_taskmanager_faults_refuse_naming_the_stale_entry(stale_stack: StaleStack) -> None:
    tm_line = stale_stack.line(stale_stack.taskmanager, "this stack's TaskManager")
    with pytest.raises(StackError, match="no live TaskManager") as killed:
        KillTaskManager(stale_stack.stack_dir, replace=False).inject()
    assert tm_line in str(killed.value)
    with pytest.raises(StackError, match="no live TaskManager"):
        PauseTaskManager(stale_stack.stack_dir, seconds=0.1, sleep=lambda s: None).inject()
    with pytest.raises(StackError, match="cannot restart Kafka: stale entry"):
        RestartKafka(stale_stack.stack_dir).inject()
    with pytest.raises(StackError, match="no Python worker"):
        KillPythonWorker(stale_stack.stack_dir).inject()
    assert stale_stack.all_untouched()


def test_resuming_paused_taskmanagers_sends_nothing_to_a_stale_pid(stale_stack: StaleStack) -> None:
    tm = stale_stack.taskmanager
    tm.send_signal(signal.SIGSTOP)  # the test pauses its own process; chronos must not resume it
    try:
        assert paused(tm)
        assert resume_taskmanagers(stale_stack.stack_dir) == []
        assert paused(tm, timeout_s=0.3)
    finally:
        tm.send_signal(signal.SIGCONT)


@pytest.mark.parametrize(("command", "says"), [
    (["stack", "down"], "nothing was running"),
    (["load", "stop"], "no load generator was running"),
    (["observe", "stop"], "no observer was running"),
])
def test_stopping_commands_say_stale_and_exit_as_for_a_stopped_stack(
        stale_stack: StaleStack, command: list[str], says: str) -> None:
    done = chronos(*command, "--stack-dir", str(stale_stack.stack_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == says
    assert "stale entry: pid " in done.stderr and "not touched" in done.stderr and "Traceback" not in done.stderr
    assert stale_stack.all_untouched()


def test_stack_status_exits_one_and_says_stale(stale_stack: StaleStack) -> None:
    done = chronos("stack", "status", "--stack-dir", str(stale_stack.stack_dir))
    assert done.returncode == 1
    assert "stack: stopped" in done.stdout
    assert stale_stack.line(stale_stack.bystanders[1], "this stack's JobManager") in done.stderr
    assert stale_stack.all_untouched()


@pytest.mark.parametrize("command", [["chaos", "kill-taskmanager"], ["load", "run", "--background"],
                                     ["status"]])
def test_commands_that_need_a_stack_refuse_a_stale_one_in_one_line(stale_stack: StaleStack, command: list[str]) -> None:
    done = chronos(*command, "--stack-dir", str(stale_stack.stack_dir))
    assert_one_line_error(done, "no stack is running", "stale")
    assert stale_stack.all_untouched()


def test_an_unreadable_state_file_is_refused_touched_by_nothing_and_removed_by_down(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text('{"kafka_pid": 1, "jobmanager_pid": 1}')
    assert_one_line_error(chronos("status", "--stack-dir", str(tmp_path)), "cannot be read", "not touched")
    assert status(tmp_path).health == "stopped"
    done = chronos("stack", "down", "--stack-dir", str(tmp_path))
    assert done.returncode == 0 and "cannot be read" in done.stderr
    assert not (tmp_path / STATE_FILE).exists()
