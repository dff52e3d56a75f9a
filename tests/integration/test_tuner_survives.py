"""`chronos tune` is meant to run for weeks: its model-fitting child is killed and the worker's broker restarted
under it (back on its port with its topics, as test_local_faults checks), and it is still deciding afterwards, says
the outage, and its liveness endpoint stays healthy. The 30-minute soak with every fault is `bench/soak.py`; this is its
short version."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import psutil
import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.stack.faults import RestartKafka
from chronos.stack.ports import free_ports
from chronos.stack.state import StackState
from tests.support.cli import chronos, submit_demo
from tests.support.tuning import FAST, TARGETS, Tuner, cancel_all, job_name, write_profile

pytestmark = pytest.mark.long(1)


def _fit_child(tuner: Tuner, timeout_s: float) -> psutil.Process:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with_children = psutil.Process(tuner.proc.pid).children(recursive=True)
        fits = [p for p in with_children if "spawn_main" in " ".join(p.cmdline())]
        if fits:
            return fits[0]
        time.sleep(0.05)
    raise AssertionError("no model-fitting child appeared")


def test_a_killed_fit_child_and_a_broker_restart_do_not_stop_the_tuner(stack: StackState, flink: FlinkRestClient,
                                                                       tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    job_id = submit_demo(stack, "10s")
    db = tmp_path / "chronos.db"
    name = job_name(stack, job_id)
    write_profile(db, name)
    port = free_ports(1)[0]
    tuner: Tuner | None = None
    try:
        assert chronos("load", "run", "--rate", "100", "--background", *sd).returncode == 0
        tuner = Tuner("--job", job_id, *TARGETS, *FAST, "--db", str(db), "--metrics-port", str(port), *sd)
        os.kill(_fit_child(tuner, 60).pid, signal.SIGKILL)
        failed = tuner.wait_for(lambda e: e["event"] == "fit-failed", 60)
        assert "died" in failed["error"]
        tuner.wait_for(lambda e: e["event"] == "decision", 120)

        RestartKafka(stack.stack_dir_path, down_s=8).inject()  # down for 4 collections, however fast it restarts
        restarted = len(tuner.events)
        tuner.wait_for(lambda e: e["event"] == "decision" and tuner.events.index(e) > restarted, 90)
        outages = [e for e in tuner.events if e["event"] == "outage"]
        assert all(e["source"] in {"kafka", "latency", "reporter"} for e in outages), outages
        assert [e["change"] for e in outages if e["source"] == "kafka"] == ["began", "ended"], outages
        assert len(outages) == len({(e["source"], e["change"]) for e in outages}), "each outage said once each way"
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        assert tuner.proc.poll() is None, "still running"
        tuner.proc.send_signal(signal.SIGTERM)
        assert tuner.finish(60) == 0
    finally:
        if tuner is not None:
            tuner.kill()
        chronos("load", "stop", *sd)
        cancel_all(flink, name)  # the worker's stack goes on to other tests
