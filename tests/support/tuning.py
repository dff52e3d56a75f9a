"""A tuner as a child process, a profile of the demo to tune it by, and the teardown every tuning test shares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import ExperimentInput
from chronos.profiler.synthetic import DRAIN_RATE, PROFILED_RATES, profile_recovery, write_profile
from chronos.stack.job_records import JobRecordStore
from chronos.stack.state import StackState
from tests.support.cli import chronos, submit_demo
from tests.support.quiesce import quiesce

TARGETS = ["--latency-p99", "600s", "--recovery", "60s", "--interval-min", "2s", "--interval-max", "30s"]


# The tuning tests that use these watch the restart path (journaled stop-with-savepoint and resubmit, its crash
# safety); pacing, the default where Flink offers it, has its own (tests/integration/test_paced_checkpoints.py).
FAST = ["--startup-grace", "15s", "--decide-every", "5s", "--collect-every", "2s", "--horizon", "20s",
        "--cooldown", "10min", "--realize", "restart"]


# The synthetic profile (chronos.profiler.synthetic) drains 250 records/s: a tenth or less of what the
# optimizer tests' truth says, so that a few hundred events/s make the recovery target bind. The demo job's capacity
# is ~1,100 events/s on two busy cores: a load step to 6,000/s (the same test at the optimizer tests' rate) kept it
# saturated, and its backlog drained long after the load stopped, on the CPU the suite's other worker needed.
__all__ = ["DRAIN_RATE", "PROFILED_RATES", "profile_recovery", "write_profile"]


class Tuner:
    """`chronos tune --json` as a child process, its events collected as they stream."""

    def __init__(self, *args: str, held_after_savepoint_s: float | None = None,
                 env: dict[str, str] | None = None) -> None:
        """`held_after_savepoint_s`: its retunes wait that long between the journaled savepoint and the resubmission
        (tests.support.held_after_savepoint), a window to kill it in. `env`: added to the environment."""
        cli = ["chronos.cli.main"] if held_after_savepoint_s is None else \
            ["tests.support.held_after_savepoint", str(held_after_savepoint_s)]
        self.proc = subprocess.Popen([sys.executable, "-m", *cli, "tune", "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                                     cwd=Path(__file__).parents[2], env={**os.environ, **(env or {})})
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Line by line, as `jq -c` or a log shipper reads it: every line of `chronos tune --json` one object, the
        summary too (a line that is not one is kept as what it is, and fails the test that looks for it)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                self.events.append({"event": "not-json", "text": line})

    def wait_for(self, predicate: Any, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in list(self.events):
                if predicate(event):
                    return event
            if self.proc.poll() is not None:
                self._reader.join(5)
                if not any(predicate(e) for e in self.events):
                    stderr = self.proc.stderr.read() if self.proc.stderr else ""
                    raise AssertionError(f"tune exited {self.proc.returncode} without that event: {stderr[-2000:]}")
            time.sleep(0.2)
        raise AssertionError(f"no such event in {timeout_s} s; saw {[e.get('text', e)[:120] for e in self.events]}")

    def finish(self, timeout_s: float) -> int:
        code = self.proc.wait(timeout_s)
        self._reader.join(10)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def job_name(stack: StackState, job_id: str) -> str:
    record = JobRecordStore(stack.stack_dir_path / "jobs").get(job_id)
    assert record is not None
    return record.spec.name


def cancel_all(flink: FlinkRestClient, name: str) -> None:
    """Every job of that name cancelled, and nothing of them left on the TaskManager."""
    quiesce(flink, lambda _jid, job_name: job_name == name)


def stop_tuning(tuner: Tuner | None, counted: ExperimentInput, sd: list[str], flink: FlinkRestClient, name: str) -> None:
    """What every tuning test leaves running: the tuner, the counted input, the load, the job's copies."""
    if tuner is not None:
        tuner.kill()
    counted.close()
    chronos("load", "stop", *sd)
    cancel_all(flink, name)


def demo_under_watch(stack: StackState, tmp_path: Path, rate: float) -> tuple[str, str, Path, ExperimentInput]:
    """The demo job at 30 s, a profile of it, and `rate` ev/s of counted input (started by the caller)."""
    job_id = submit_demo(stack, "30s")
    name = job_name(stack, job_id)
    db = tmp_path / "chronos.db"
    write_profile(db, name)
    counted = ExperimentInput(stack.bootstrap, "vehicle-events", "vehicle-stats", rate=rate, vehicles=50,
                              run_id=uuid.uuid4().hex[:6])
    return job_id, name, db, counted
