"""`chronos profile` on the real stack: parallel profiling runs on clusters of their own, interrupted
and resumed, with the live job running untouched beside them (exactly-once checked on its output)."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import ExperimentInput
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.profiler.store import ProfileStore
from chronos.profiler.workload import record_trace
from chronos.stack.profiling_clusters import COPY_NICENESS
from chronos.stack.state import StackState, load_state
from tests.conftest import BackgroundLoad, DemoJob, wait_until
from tests.support.cli import assert_one_line_error, chronos, submit_demo
from tests.support.processes import leftovers
from tests.support.recoveries_seen import recoveries_seen

pytestmark = [pytest.mark.long(5), pytest.mark.copies]


class ClusterWatch:
    """Every profiling cluster directory the profile creates, seen by a thread polling its base: so the
    check for survivors looks at this profile's clusters only (another stack may be up beside it)."""

    def __init__(self, sd: Path) -> None:
        self.base = sd / "profiling"
        self.seen: set[Path] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            found = {p.parent for p in self.base.glob("*/*/stack.json")}
            with self._lock:
                self.seen |= found

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def survivors(self) -> list[str]:
        with self._lock:
            seen = sorted(self.seen)
        return [line for d in seen for line in leftovers(d)]


def _profile_topics(bootstrap: str) -> list[str]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return [t for t in admin.list_topics() if "-profile-" in t]
    finally:
        admin.close()


def _assert_nothing_left(stack: StackState, sd: Path, clusters: ClusterWatch) -> None:
    profiling = sd / "profiling"
    assert clusters.seen, "no profiling cluster was seen"
    assert not clusters.survivors(), f"a profiling cluster survived: {clusters.survivors()}"
    assert not list(profiling.glob("*/*/stack.json")), "a profiling stack is still on record"
    assert _profile_topics(stack.bootstrap) == [], "a profiling topic was left on the broker"


def _assert_copies_run_below_the_live_job(sd: Path) -> None:
    """A copy's Flink processes run at COPY_NICENESS, the live stack's at 0: on a shared host the copies take the
    CPU the live job leaves."""
    copy, live = next(load_state(p.parent) for p in (sd / "profiling").glob("*/*/stack.json")), load_state(sd)
    assert copy is not None and live is not None and copy.niceness == COPY_NICENESS and live.niceness == 0
    for state, niceness in ((copy, COPY_NICENESS), (live, 0)):
        for record in (state.jobmanager, *state.taskmanagers):
            with contextlib.suppress(psutil.NoSuchProcess):  # a fault may have just killed and replaced it
                assert psutil.Process(record.pid).nice() == niceness, record


PROFILE = ["--rate", "400", "--intervals", "2s..6s", "--parallel", "2", "--faults", "1", "--repeats", "1", "--steady", "8s",
           "--warmup", "8s", "--hold", "5s", "--timeout", "120s", "--budget", "30m"]


def _trials_under_way(db: Path) -> int:
    """Trials asked of the profile's study and not yet told: the ones a resumed profile queues again."""
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'").fetchone()[0])


def test_a_small_profile_is_interrupted_resumed_and_leaves_the_live_job_untouched(
    stack: StackState, flink: FlinkRestClient, profiling_turn: None
) -> None:
    sd = Path(stack.stack_dir)
    opts = ["--stack-dir", str(sd)]
    live_job = submit_demo(stack, "3s")
    live_input = ExperimentInput(stack.bootstrap, "vehicle-events", "vehicle-stats", rate=200, vehicles=50,
                                 run_id=uuid.uuid4().hex[:8])
    live_input.start()
    store = ProfileStore(sd / "profiles.db")
    clusters = ClusterWatch(sd)
    try:
        # 1. Four runs asked, two at a time; stopped with Ctrl-C once two are done and another is under way (the
        # fourth starts as the second ends, so one always is: however fast this machine runs them). Under way: asked
        # of the study and not told (a worker's copy also runs between its runs, so a cluster says nothing).
        proc = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "profile", "run", "--job", live_job,
                                 "--runs", "4", "--json", "--explore-recovery", *PROFILE, *opts],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: len(store.runs()) >= 2 or proc.poll() is not None, 600, 2, what="two profiling runs")
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            wait_until(lambda: _trials_under_way(sd / "profiles.db") >= 1, 120, 0.2, what="a run under way")
            wait_until(lambda: len(list((sd / "profiling").glob("*/*/stack.json"))) >= 1, 120, 0.2,
                       what="its copy's cluster")
            _assert_copies_run_below_the_live_job(sd)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr[-2000:]
        assert "Traceback" not in stderr
        runs = store.runs()
        done = len(runs)
        assert done in (2, 3) and all(r.status == "completed" for r in runs), [r.error for r in runs]
        for run in runs:
            # The first trial carries the repeat (one setting measured twice: the models' noise floor), and its
            # steady window again after the faults (the p99 at that setting twice).
            assert len(run.recoveries) == (2 if run.trial_number == 0 else 1), run
            assert [a.p99_ms is not None for a in run.repeat_steady] == ([True] if run.trial_number == 0 else []), run
            for m in run.recoveries:
                assert m.fault.injected_wall_ms < m.detected_ms < m.running_ms  # type: ignore[operator]
                assert m.recovered_ms is None or m.running_ms <= m.recovered_ms  # type: ignore[operator]
                assert m.interval_ms == run.config.interval_ms
            assert run.steady is not None and run.steady.p99_ms is not None and run.steady.throughput
            assert run.steady.checkpoint_duration_ms is not None
        # At 400 ev/s the steady-state bands learnt from an 8 s warm-up are narrow against 0.5 s throughput samples:
        # a copy back at the input rate is now and then judged not recovered within the timeout.
        assert sum(m.recovery_s is not None for r in runs for m in r.recoveries) >= sum(len(r.recoveries) for r in runs) - 1, \
            recoveries_seen(runs)
        _assert_nothing_left(stack, sd, clusters)

        # 2. Resumed: an interrupted trial runs again; the completed ones are not repeated.
        resumed = chronos("profile", "run", "--resume", "--runs", str(done + 1), "--parallel", "1", "--json", *opts,
                          timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        outcome = json.loads(resumed.stdout)
        assert outcome["requeued"] in (1, 2) and (outcome["completed"], outcome["failed"]) == (1, 0), outcome
        # The live job was read before the first copy and while it ran: what the profile did to it is said.
        live = outcome["live"]
        assert live is not None and live["readings_before"] >= 3 and live["readings_during"] >= 3, live
        assert live["p99_before_ms"] and live["p99_during_ms"] and live["throughput_during"], live
        assert len(store.runs()) == done + 1 and len({r.trial_number for r in store.runs()}) == done + 1
        _assert_nothing_left(stack, sd, clusters)

        # The study explored the recovery settings chronos proposes beside the live ones: runs at each, the proposed
        # ones on clusters with a spare TaskManager and the proposed heartbeats, stored with every recovery.
        runs = store.runs()
        assert {r.config.recovery for r in runs} == {"live", "proposed"}, [r.config for r in runs]  # the design
        for run in runs:
            for m in run.recoveries:
                settings = dict(m.settings_in_force)
                assert (settings.get("chronos.spare-taskmanagers") == "1") == (run.config.recovery == "proposed")
                assert (settings.get("heartbeat.timeout") == "10s") == (run.config.recovery == "live"), settings

        # 3. The report reads it all back.
        report = chronos("profile", "report", "--json", "--models", "--plots", str(sd / "plots"), *opts)
        assert report.returncode == 0, report.stderr
        data = json.loads(report.stdout)
        assert len(data["runs"]) == done + 1 and len(data["plots"]) == 2
        # Every recovered fault by phase, measured and predicted from the other runs (held out).
        assert data["phases"] and all(p["measured"]["detect_s"] > 0 and p["predicted"]["detect_s"] > 0
                                      for p in data["phases"]), data["phases"]
        assert set(data["models"]) <= {"recovery", "p99"}, data["models"]
        first = [m.recovery_s for r in store.runs() if r.trial_number == 0 for m in r.recoveries]
        if "recovery" in data["models"] and None not in first:  # the repeat was measured: its scatter is the floor
            assert data["models"]["recovery"]["noise_floor_mape"] is not None, data["models"]
        if "p99" in data["models"] and any(r.trial_number == 0 for r in store.runs()):
            assert data["models"]["p99"]["noise_floor_mape"] is not None, data["models"]
        assert data["live"] and all(entry["copy_niceness"] == COPY_NICENESS for entry in data["live"]), data["live"]
        assert all(Path(p).stat().st_size > 10_000 for p in data["plots"])

        # 4. The live job ran on, untouched: still RUNNING, and exactly-once over everything sent meanwhile.
        assert flink.job(live_job).state == "RUNNING"
        delivery = live_input.finish(timeout_s=120)
        assert delivery.ok and delivery.input_events > 30_000, delivery
    finally:
        clusters.close()
        live_input.close()
        store.close()
        if flink.job(live_job).state == "RUNNING":
            flink.cancel(live_job)


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
