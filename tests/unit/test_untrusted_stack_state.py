"""A state file is acted on only while it is chronos's own and describes this stack: one another user could have
written, one that puts the services anywhere but where this stack's are, or one with an identity that matches
anything, is refused; `stack down` then touches nothing it names and still clears it. Real processes the test
starts itself (`sleep`) stand in for strangers."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from chronos.stack.flink_cluster import read_pids
from chronos.stack.local_stack import down, status
from chronos.stack.processes import ProcessRecord, check, identify
from chronos.stack.service_account import SERVICES_ROOT
from chronos.stack.state import STATE_FILE, UnreadableState, load_state
from tests.support.processes import bystanders, untouched


def _state(folder: Path, record: dict[str, object], /, **changes: object) -> dict[str, object]:
    stack = folder.resolve()
    return {"stack_dir": str(stack), "started_at": 0.0, "kafka_port": 1, "kafka_controller_port": 2, "kafka": None,
            "flink_rest_port": 3, "flink_rpc_port": 4, "prometheus_port_base": 5, "jobmanager": record,
            "taskmanagers": [], "slots": 1, "kafka_lib": "", "connector_jar": "", "services_dir": str(stack),
            "service_user": None, **changes}


def _write(stack_dir: Path, state: dict[str, object]) -> Path:
    stack_dir.mkdir(mode=0o700, exist_ok=True)
    path = stack_dir / STATE_FILE
    path.write_text(json.dumps(state))
    path.chmod(0o600)
    return path


def test_an_identity_that_matches_anything_is_refused_when_read() -> None:
    with pytest.raises(ValidationError, match="argv_marks"):
        ProcessRecord(pid=1234, role="x", argv_marks=(), started_s=1.0)
    with pytest.raises(ValidationError, match="argv_marks"):
        ProcessRecord(pid=1234, role="x", argv_marks=("",), started_s=1.0)
    for pid in (-1, 0, 1, 2**40):
        with pytest.raises(ValidationError, match="pid"):
            ProcessRecord(pid=pid, role="x", argv_marks=("x",), started_s=1.0)


def test_a_process_running_as_another_user_than_recorded_is_stale() -> None:
    with bystanders(1) as (stranger,):
        record = identify(stranger.pid, "this stack's JobManager", ("600",))
        assert record.uid == os.getuid() and check(record).ours
        assert check(record.model_copy(update={"uid": os.getuid() + 1})).verdict == "stale"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a state file owned by another user")
def test_root_never_acts_on_a_state_file_another_user_wrote(tmp_path: Path) -> None:
    """The sweep's case: owned by another user, naming a stranger by its exact start time."""
    with bystanders(1) as (stranger,):
        exact = identify(stranger.pid, "this stack's JobManager", ("600",)).model_dump()
        path = _write(tmp_path / "stack", _state(tmp_path / "stack", exact))
        os.chown(path, 65534, 65534)
        with pytest.raises(UnreadableState, match="belongs to uid 65534"):
            load_state(tmp_path / "stack")
        result = down(tmp_path / "stack")
        assert result.stopped == () and any("not trusted" in line for line in result.stale)
        assert untouched(stranger)
        assert not path.exists(), "down removes a state file it refused, from a stack folder of its own"


def test_a_state_file_putting_the_services_elsewhere_is_refused_and_nothing_there_is_touched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "flink" / "pid").mkdir(parents=True)
    with bystanders(2) as (jobmanager, named_in_pid_file):
        pid_file = victim / "flink" / "pid" / "flink-root-standalonesession.pid"
        pid_file.write_text(f"{named_in_pid_file.pid}\n")
        record = identify(jobmanager.pid, "this stack's JobManager", ("600",)).model_dump()
        _write(tmp_path / "stack", _state(tmp_path / "stack", record, services_dir=str(victim)))
        with pytest.raises(UnreadableState, match="puts the services in"):
            load_state(tmp_path / "stack")
        assert status(tmp_path / "stack").health == "stopped"
        down(tmp_path / "stack", purge=True)
        assert pid_file.exists() and untouched(jobmanager) and untouched(named_in_pid_file)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the services root is root's")
def test_purge_never_deletes_another_stack_s_services_directory(tmp_path: Path) -> None:
    other = SERVICES_ROOT / f"someone-else-{uuid.uuid4().hex[:12]}"
    other.mkdir(parents=True)
    (other / "data").write_text("another stack's topics")
    try:
        with bystanders(1) as (jobmanager,):
            record = identify(jobmanager.pid, "this stack's JobManager", ("600",)).model_dump()
            _write(tmp_path / "stack", _state(tmp_path / "stack", record, services_dir=str(other),
                                              service_user="chronos"))
            down(tmp_path / "stack", purge=True)
            assert (other / "data").exists() and untouched(jobmanager)
    finally:
        shutil.rmtree(other)


def test_a_state_of_another_folder_is_refused(tmp_path: Path) -> None:
    with bystanders(1) as (jobmanager,):
        record = identify(jobmanager.pid, "this stack's JobManager", ("600",)).model_dump()
        _write(tmp_path / "stack", _state(tmp_path / "stack", record, stack_dir="/"))
        with pytest.raises(UnreadableState, match="describes the stack in '/'"):
            load_state(tmp_path / "stack")


def test_a_state_down_cannot_read_is_still_cleared(tmp_path: Path) -> None:
    record = {"pid": -1, "role": "x", "argv_marks": ["x"], "started_s": 1.0}
    path = _write(tmp_path / "stack", _state(tmp_path / "stack", record))
    with pytest.raises(UnreadableState, match=r"jobmanager\.pid"):
        load_state(tmp_path / "stack")
    result = down(tmp_path / "stack")
    assert any("jobmanager.pid" in line for line in result.stale) and not path.exists()


def test_a_pid_file_holding_what_is_not_a_pid_yields_only_pids(tmp_path: Path) -> None:
    pid_file = tmp_path / "flink-root-standalonesession.pid"
    pid_file.write_text("²\n-1\n0\n1\n99999999999\n4242\n\x00\n")
    assert read_pids(pid_file) == [4242]
    pid_file.write_bytes(b"\xff\xfe" * 100)
    assert read_pids(pid_file) == []
