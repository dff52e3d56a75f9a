"""A job chronos was not built around, end to end on the real stack: the shop's orders x payments join (two
input topics of its own schema, an ISO-8601 and a nested epoch-ms event time), known to chronos only by its job
file. Adopted while running under its own load; tuned with no profile (a cold start, said as such); profiled on
copies fed its own recorded input, on clusters of their own below the live job's priority, exploring the proposed
recovery settings, interrupted and resumed, and reported; tuned again from the models. Its live output stays
exactly-once throughout, and no reader of chronos's ever commits for its consumer group. Bad input gets one line
each.

The suite's one real profile: each run of a profile starts a cluster, submits a copy and kills its TaskManagers
(~1-2 min apiece on two cores), so what a profile does is proven on one profile of a job chronos was not built
around, not on a second of the demo job."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.job_file import load_job_file
from chronos.jobs.shipped import shipped
from chronos.jobs.shop import ShopTopics, run_shop
from chronos.jobs.shop_delivery import expected_paid, read_committed
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings
from chronos.profiler.store import ProfileStore
from chronos.rates import ConstantRate
from chronos.stack.profiling_clusters import COPY_NICENESS
from chronos.stack.state import StackState
from tests.conftest import wait_until
from tests.support.cli import assert_one_line_error, chronos
from tests.support.profile_copies import (
    ClusterWatch,
    assert_copies_run_below_the_live_job,
    assert_nothing_left,
    copies_on_record,
    trials_under_way,
)
from tests.support.recoveries_seen import recoveries_seen
from tests.support.tuning import Tuner

pytestmark = [pytest.mark.long(8), pytest.mark.copies]

SHIPPED = shipped("shop_payments.yaml")
TUNE = ["--latency-p99", "5s", "--recovery", "60s", "--interval-min", "1s", "--interval-max", "60s",
        "--startup-grace", "15s", "--decide-every", "5s", "--collect-every", "2s", "--horizon", "20s",
        "--dry-run", "--metrics-port", "-1"]
PROFILE = ["--parallel", "2", "--intervals", "2s..6s", "--faults", "1", "--repeats", "1", "--steady", "10s",
           "--warmup", "0s", "--hold", "5s", "--timeout", "120s", "--budget", "30m", "--json"]


def shop_file(tmp_path: Path, tag: str, *, copy: bool = True, event_times: tuple[str, ...] | None = None) -> Path:
    """The shipped job file with topics, group and name of this test's own (and its SQL by absolute path)."""
    data = yaml.safe_load(SHIPPED.read_text())
    data["name"] += f"-{tag}"
    data["program"]["sql"] = str(SHIPPED.with_name(data["program"]["sql"]))
    data["program"]["vars"] = {k: f"{v}-{tag}" for k, v in data["program"]["vars"].items()}
    data["io"]["input-topic"] = [f"{t}-{tag}" for t in data["io"]["input-topic"]]
    data["io"]["output-topic"] += f"-{tag}"
    if event_times is not None:
        data["copy"]["event-time-fields"] = list(event_times)
    if not copy:
        del data["copy"]
    path = tmp_path / f"shop-{uuid.uuid4().hex[:4]}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def group_offsets(bootstrap: str) -> dict[str, dict[tuple[str, int], int]]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        groups = [str(g["group_id"]) for g in admin.list_groups()]
        return {g: {(tp.topic, tp.partition): m.offset for tp, m in admin.list_group_offsets(g)[g].items()}
                for g in groups}
    finally:
        admin.close()


def test_a_users_two_topic_job_is_adopted_tuned_cold_profiled_on_its_own_input_resumed_and_stays_exactly_once(
        stack: StackState, flink: FlinkRestClient, tmp_path: Path, profiling_turn: None) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    tag = uuid.uuid4().hex[:6]
    path = shop_file(tmp_path, tag)
    spec, io = load_job_file(path, {"bootstrap": stack.bootstrap})
    topics = ShopTopics(f"shop-orders-{tag}", f"shop-payments-{tag}")
    ensure_topics(stack.bootstrap, [*io.input_topics, io.output_topic], partitions=2)
    job_id = RestSubmitter(flink, find_distribution().python_jar).submit(spec, CheckpointSettings(3000))
    stop = threading.Event()
    load = threading.Thread(target=run_shop, args=(stack.bootstrap, ConstantRate(300)),
                            kwargs={"customers": 500, "seed": 3, "topics": topics, "should_stop": stop.is_set,
                                    "duration_s": 3600}, daemon=True)
    tuner: Tuner | None = None
    profile_db, cold_db = tmp_path / "profiles.db", tmp_path / "cold.db"
    store = ProfileStore(profile_db)
    clusters = ClusterWatch(Path(stack.stack_dir))
    try:
        flink.wait_until_running(job_id, timeout_s=120)
        load.start()
        adopted = chronos("job", "adopt", job_id, "--file", str(path), *sd)
        assert adopted.returncode == 0, adopted.stderr
        groups_before = group_offsets(stack.bootstrap)

        # 1. No profile: the tuner still decides, from the live checkpoints, and says it is a cold start.
        # --allow-fault: with no models it kills one TaskManager once (replaced) to measure a recovery.
        tuner = Tuner("--job", job_id, *TUNE, "--allow-fault", "--duration", "70s", "--db", str(cold_db), *sd)
        # 2. Meanwhile the profile records 30 s of the live input and replays it into copies, exploring the recovery
        # settings chronos proposes beside the live ones. Four runs asked, two at a time; stopped with Ctrl-C once two
        # are done and another is under way (the fourth starts as the second ends, so one always is: however fast this
        # machine runs them). Under way: asked of the study and not told (a worker's copy also runs between its runs,
        # so a cluster says nothing).
        proc = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "profile", "run", "--job", job_id,
                                 "--record", "30s", "--db", str(profile_db), "--runs", "4", "--explore-recovery",
                                 *PROFILE, *sd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: len(store.runs()) >= 2 or proc.poll() is not None, 900, 2, what="two profiling runs")
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            wait_until(lambda: trials_under_way(profile_db) >= 1, 120, 0.2, what="a run under way")
            wait_until(lambda: copies_on_record(Path(stack.stack_dir)) >= 1, 120, 0.2, what="its copy's cluster")
            assert_copies_run_below_the_live_job(Path(stack.stack_dir))
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr[-3000:]
        assert "Traceback" not in stderr
        assert "the job's own input, recorded for 30s and replayed" in stderr
        cold = tuner.wait_for(lambda e: e.get("event") == "decision" and "grace" not in e["reason"], 60)
        assert cold["mode"] == "cold-start" and "cold start (no models)" in cold["reason"], cold
        assert cold["wanted_s"] is not None and cold["wanted_s"] < 5, "the latency target bounds it"
        assert tuner.finish(90) == 0
        assert any(e.get("event") == "message" and "recovery probe (--allow-fault): kill-taskmanager" in e["text"]
                   for e in tuner.events), [e.get("text", "")[:100] for e in tuner.events]
        runs = store.runs()
        done = len(runs)
        stopped = json.loads(stdout)
        assert stopped["interrupted"] and (stopped["completed"], stopped["failed"]) == (done, 0), stopped
        assert done in (2, 3) and all(r.status == "completed" for r in runs), [r.error for r in runs]
        (profile_id,) = {r.profile_id for r in runs}
        sample = store.sample(profile_id)
        # 30 s of the shop's 300 records/s (orders and payments together): most of them, not a trickle
        assert sample is not None and set(sample.topics) == set(io.input_topics) and len(sample.records) > 6_000
        for run in runs:
            # The first trial carries the repeat (one setting measured twice: the models' noise floor), and its
            # steady window again after the faults (the p99 at that setting twice).
            assert len(run.recoveries) == (2 if run.trial_number == 0 else 1), run
            assert [a.p99_ms is not None for a in run.repeat_steady] == ([True] if run.trial_number == 0 else []), run
            for m in run.recoveries:
                assert m.fault.injected_wall_ms < m.detected_ms < m.running_ms  # type: ignore[operator]
                assert m.recovered_ms is None or m.running_ms <= m.recovered_ms  # type: ignore[operator]
                assert m.interval_ms == run.config.interval_ms
            # the copy's committed output was there and parsed: its latency came from the paid_ms of its records
            assert run.steady is not None and run.steady.p99_ms is not None and run.steady.throughput, run
            assert run.steady.checkpoint_duration_ms is not None
        assert_nothing_left(stack, clusters)

        # 3. Resumed: the interrupted trials run again (on the recorded input, from the store); the completed ones
        # are not repeated.
        resumed = chronos("profile", "run", "--resume", "--runs", str(done + 2), "--parallel", "2", "--json",
                          "--db", str(profile_db), *sd, timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        outcome = json.loads(resumed.stdout)
        assert outcome["requeued"] in (1, 2) and (outcome["completed"], outcome["failed"]) == (2, 0), outcome
        # The live job was read before the first copy and while it ran: what the profile did to it is said.
        live = outcome["live"]
        assert live is not None and live["readings_before"] >= 3 and live["readings_during"] >= 3, live
        assert live["p99_before_ms"] and live["p99_during_ms"] and live["throughput_during"], live
        runs = store.runs()
        assert len(runs) == done + 2 and len({r.trial_number for r in runs}) == done + 2
        assert_nothing_left(stack, clusters)
        # The study explored the recovery settings chronos proposes beside the live ones: runs at each, the proposed
        # ones on clusters with a spare TaskManager and the proposed heartbeats, stored with every recovery.
        assert {r.config.recovery for r in runs} == {"live", "proposed"}, [r.config for r in runs]  # the design
        for run in runs:
            for m in run.recoveries:
                settings = dict(m.settings_in_force)
                assert (settings.get("chronos.spare-taskmanagers") == "1") == (run.config.recovery == "proposed")
                assert (settings.get("heartbeat.timeout") == "10s") == (run.config.recovery == "live"), settings
        recovered = [m.recovery_s for r in runs for m in r.recoveries if m.recovery_s is not None]
        assert len(recovered) >= 4, ("enough recoveries measured to fit a model", recoveries_seen(runs))

        # 4. The report reads it all back.
        report = chronos("profile", "report", "--json", "--models", "--plots", str(tmp_path / "plots"),
                         "--db", str(profile_db), *sd)
        assert report.returncode == 0, report.stderr
        data = json.loads(report.stdout)
        assert len(data["runs"]) == done + 2 and len(data["plots"]) == 2
        # Every recovered fault by phase, measured and predicted from the other runs (held out).
        assert data["phases"] and all(p["measured"]["detect_s"] > 0 and p["predicted"]["detect_s"] > 0
                                      for p in data["phases"]), data["phases"]
        assert set(data["models"]) <= {"recovery", "p99"}, data["models"]
        first = [m.recovery_s for r in runs if r.trial_number == 0 for m in r.recoveries]
        if "recovery" in data["models"] and None not in first:  # the repeat was measured: its scatter is the floor
            assert data["models"]["recovery"]["noise_floor_mape"] is not None, data["models"]
        if "p99" in data["models"] and any(r.trial_number == 0 for r in runs):  # its steady window measured again
            assert data["models"]["p99"]["noise_floor_mape"] is not None, data["models"]
        assert data["live"] and all(entry["copy_niceness"] == COPY_NICENESS for entry in data["live"]), data["live"]
        assert all(Path(p).stat().st_size > 10_000 for p in data["plots"])

        # 5. With the profile, decisions come from the models.
        tuner = Tuner("--job", job_id, *TUNE, "--duration", "40s", "--db", str(profile_db), *sd)
        informed = tuner.wait_for(lambda e: e.get("event") == "decision", 60)
        assert informed["mode"] == "models", informed
        tuner.proc.send_signal(signal.SIGTERM)  # one decision is what this step asks: stopped as a user stops it
        assert tuner.finish(60) == 0

        # 6. Bad input, one line each: an event-time path that matches nothing in the recorded records ...
        adopt_as = [path, shop_file(tmp_path, tag, event_times=("$.placed_at", "$.paid.when"))]
        assert chronos("job", "adopt", job_id, "--file", str(adopt_as[1]), *sd).returncode == 0
        assert_one_line_error(chronos("profile", "run", "--job", job_id, "--record", "5s", "--db", str(profile_db),
                                      *PROFILE, *sd), "event-time field $.paid.when matches no time",
                              'an example record: {"')
        # ... a window with no records (the load stopped) ...
        stop.set()
        load.join(30)
        assert chronos("job", "adopt", job_id, "--file", str(path), *sd).returncode == 0
        assert_one_line_error(chronos("profile", "run", "--job", job_id, "--record", "5s", "--db", str(profile_db),
                                      *PROFILE, *sd), "carried no records during the 5 s recording")
        # ... and a job file that does not say how to make a copy.
        assert chronos("job", "adopt", job_id, "--file", str(shop_file(tmp_path, tag, copy=False)), *sd).returncode == 0
        assert_one_line_error(chronos("profile", "run", "--job", job_id, "--dry-run", "--db", str(profile_db), *sd),
                              "no copy: section in its job file", "copy: {input-topics")

        # 7. The live job ran on, exactly once over everything its load sent, and its group was never chronos's.
        assert flink.job(job_id).state == "RUNNING"
        expected, orders = expected_paid(stack.bootstrap, topics)
        assert orders > 20_000 and sum(expected.values()) > 0.8 * orders

        def settled() -> bool:
            out = read_committed(stack.bootstrap, io.output_topic)
            settled.out = out  # type: ignore[attr-defined]
            return len(out) >= sum(expected.values())

        wait_until(settled, 90, 3, what="the live job's output to catch up")
        out = settled.out  # type: ignore[attr-defined]
        assert len({o["order_id"] for o in out}) == len(out), "no paid order written twice"
        assert Counter(o["customer"] for o in out) == expected, "every paid order once, per customer"
        groups_after = group_offsets(stack.bootstrap)
        live_group = f"chronos-shop-{tag}"
        on_live_inputs = {g for g, offsets in groups_after.items() if any(t in io.input_topics for t, _ in offsets)}
        assert on_live_inputs == {live_group}, "only the job's own group ever committed for its input topics"
        assert all(groups_after[live_group][tp] >= offset for tp, offset in groups_before.get(live_group, {}).items()), \
            "the job's group offsets only ever moved forward"
    finally:
        clusters.close()
        store.close()
        stop.set()
        if tuner is not None:
            tuner.kill()
        if load.is_alive():
            load.join(30)
        if flink.job(job_id).state == "RUNNING":
            flink.cancel(job_id)
