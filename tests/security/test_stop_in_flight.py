"""A SIGTERM is honoured within a second or two whatever call is in flight: `timeout 60 chronos tune` once ran
731 s because the tuner took the first SIGTERM as "stop after this step" while the step waited on a reply that
never came."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chronos.flink.rest import PATIENT_REPLY_DEADLINE_S
from tests.security.sweep_cases import _record_text
from tests.support.cli import assert_one_line_error, chronos
from tests.support.hostile_flink import JOB, hostile_flink, silence, trickle


def test_a_tuner_waiting_on_a_silent_flink_stops_within_two_seconds_of_sigterm(tmp_path: Path) -> None:
    (tmp_path / "stack" / "jobs").mkdir(parents=True)
    (tmp_path / "stack" / "jobs" / f"{JOB}.json").write_text(_record_text())
    with hostile_flink({f"/jobs/{JOB}": silence()}) as server:
        env = {**os.environ, "CHRONOS_STACK_DIR": str(tmp_path / "stack"), "HOME": str(tmp_path)}
        tuner = subprocess.Popen(
            [sys.executable, "-m", "chronos.cli.main", "tune", "--job", JOB, "--latency-p99", "1s", "--recovery", "30s",
             "--metrics-port", "-1", "--rest-url", server.url, "--db", str(tmp_path / "p.db")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 30
            while f"GET /jobs/{JOB}" not in server.requests:  # the call is in flight (the handler is in place)
                assert tuner.poll() is None and time.monotonic() < deadline, tuner.communicate()
                time.sleep(0.02)
            waiting_since = time.monotonic()
            tuner.send_signal(signal.SIGTERM)
            _, stderr = tuner.communicate(timeout=30)
            took = time.monotonic() - waiting_since
        finally:
            if tuner.poll() is None:
                tuner.kill()
                tuner.wait(10)
    # The call's own deadline (4 s) would have ended it later, saying "did not answer": it did not get that far.
    assert took < 3.0, f"{took:.1f} s: {stderr}"
    assert stderr.splitlines() == ["stopping after the current step", "error: interrupted before tuning began"], stderr
    assert tuner.returncode == 1


def test_a_tuner_on_a_trickling_flink_ends_by_its_patient_deadline_saying_so(tmp_path: Path) -> None:
    """No signal: one byte every half second keeps every socket read alive; the exchange still ends at the
    deadline of a long-running part (15 s, chronos.flink.rest), said in one line."""
    (tmp_path / "stack" / "jobs").mkdir(parents=True)
    (tmp_path / "stack" / "jobs" / f"{JOB}.json").write_text(_record_text())
    with hostile_flink({f"/jobs/{JOB}": trickle(0.5)}) as server:
        env = {**os.environ, "CHRONOS_STACK_DIR": str(tmp_path / "stack"), "HOME": str(tmp_path)}
        started = time.monotonic()
        done = chronos("tune", "--job", JOB, "--latency-p99", "1s", "--recovery", "30s", "--metrics-port", "-1",
                       "--rest-url", server.url, "--db", str(tmp_path / "p.db"), env=env, timeout=60)
    assert time.monotonic() - started < PATIENT_REPLY_DEADLINE_S + 5
    assert_one_line_error(done, "did not answer GET /jobs/", "no whole reply within 15 s")
