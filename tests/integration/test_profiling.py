"""`chronos profile` on the real stack, the parts that start no copy: the live workload recorded from its input
offsets, and bad input refused in one line. A whole profile (copies on clusters of their own, interrupted and
resumed, the live job untouched beside them) is tests/integration/test_any_job.py's."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.profiler.workload import record_trace
from chronos.stack.state import StackState
from tests.conftest import BackgroundLoad, DemoJob
from tests.support.cli import assert_one_line_error, chronos, submit_demo


def test_the_live_workload_is_recorded_from_its_input_offsets(demo_job: DemoJob) -> None:
    topic = demo_job.settings.input_topic
    load = BackgroundLoad(demo_job.stack.bootstrap, topic, rate=2000, duration_s=30)
    reader = TopicEndOffsets(demo_job.stack.bootstrap, topic)
    try:
        time.sleep(3)
        trace = record_trace(reader, window_s=12, every_s=3)
    finally:
        reader.close()
        load.halt()
    assert len(trace.times_s) == 4 and trace.times_s[-1] == pytest.approx(9, abs=0.5)
    assert all(1600 <= r <= 2400 for r in trace.rates), trace.rates


def test_profile_bad_input_on_a_running_stack(stack: StackState, flink: FlinkRestClient, tmp_path: Path) -> None:
    opts = ["--stack-dir", stack.stack_dir, "--db", str(tmp_path / "p.db")]
    assert_one_line_error(chronos("profile", "run", "--job", "f" * 32, *opts), "not submitted by chronos")
    job = submit_demo(stack, "3s")
    try:
        base = ["profile", "run", "--job", job, "--rate", "1000", *opts]
        assert_one_line_error(chronos(*base, "--intervals", "10s"), "invalid --intervals")
        assert_one_line_error(chronos(*base, "--loads", "0"), "invalid --loads")
        assert_one_line_error(chronos(*base, "--budget", "1m"), "too small for one profiling run")
        assert_one_line_error(chronos(*base, "--parallel", "50"), "no room for 50 profiling clusters")
        dry = chronos(*base, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert len(plan["first_configurations"]) == len(plan["estimated_run_s"]) == 4
        assert plan["workload_mean_rate"] == 1000
        quiet = chronos("profile", "run", "--job", job, "--record", "3s", "--dry-run", *opts)
        assert_one_line_error(quiet, "carried no events during the 3 s recording", "--rate")
    finally:
        flink.cancel(job)
