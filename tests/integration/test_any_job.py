"""A job chronos was not built around, end to end on the real stack: the shop's orders x payments join (two
input topics of its own schema, an ISO-8601 and a nested epoch-ms event time), known to chronos only by its job
file. Adopted while running under its own load; tuned with no profile (a cold start, said as such); profiled on
copies fed its own recorded input; tuned again from the models. Its live output stays exactly-once throughout,
and no reader of chronos's ever commits for its consumer group. Bad input gets one line each."""

from __future__ import annotations

import json
import signal
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
from chronos.stack.state import StackState
from tests.conftest import wait_until
from tests.support.cli import assert_one_line_error, chronos
from tests.support.recoveries_seen import recoveries_seen
from tests.support.tuning import Tuner

pytestmark = [pytest.mark.long(8), pytest.mark.copies]

SHIPPED = shipped("shop_payments.yaml")
TUNE = ["--latency-p99", "5s", "--recovery", "60s", "--interval-min", "1s", "--interval-max", "60s",
        "--startup-grace", "15s", "--decide-every", "5s", "--collect-every", "2s", "--horizon", "20s",
        "--dry-run", "--metrics-port", "-1"]
PROFILE = ["--runs", "3", "--parallel", "2", "--intervals", "2s..8s", "--faults", "2", "--repeats", "0", "--steady", "15s",
           "--warmup", "10s", "--hold", "5s", "--timeout", "120s", "--budget", "30m", "--json"]


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


def test_a_users_two_topic_job_is_adopted_tuned_cold_profiled_on_its_own_input_and_stays_exactly_once(
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
    try:
        flink.wait_until_running(job_id, timeout_s=120)
        load.start()
        adopted = chronos("job", "adopt", job_id, "--file", str(path), *sd)
        assert adopted.returncode == 0, adopted.stderr
        groups_before = group_offsets(stack.bootstrap)

        # 1. No profile: the tuner still decides, from the live checkpoints, and says it is a cold start.
        # --allow-fault: with no models it kills one TaskManager once (replaced) to measure a recovery.
        tuner = Tuner("--job", job_id, *TUNE, "--allow-fault", "--duration", "70s", "--db", str(cold_db), *sd)
        # 2. Meanwhile the profile records 30 s of the live input and replays it into three copies.
        profiled = chronos("profile", "run", "--job", job_id, "--record", "30s", "--db", str(profile_db), *PROFILE,
                           *sd, timeout=1200)
        cold = tuner.wait_for(lambda e: e.get("event") == "decision" and "grace" not in e["reason"], 60)
        assert cold["mode"] == "cold-start" and "cold start (no models)" in cold["reason"], cold
        assert cold["wanted_s"] is not None and cold["wanted_s"] < 5, "the latency target bounds it"
        assert tuner.finish(60) == 0
        assert any(e.get("event") == "message" and "recovery probe (--allow-fault): kill-taskmanager" in e["text"]
                   for e in tuner.events), [e.get("text", "")[:100] for e in tuner.events]
        assert profiled.returncode == 0, profiled.stderr[-3000:]
        assert "the job's own input, recorded for 30s and replayed" in profiled.stderr
        outcome = json.loads(profiled.stdout)
        assert outcome["completed"] == 3 and outcome["failed"] == 0, outcome
        # Three runs at one load on two workers: the worker that ran two paced its running copy for the second
        # (unless the live job left its band meanwhile, which stops the copies).
        assert outcome["copies"] == 2 or outcome["pauses"] > 0, outcome
        store = ProfileStore(profile_db)
        try:
            runs = store.runs()
            (profile_id,) = {r.profile_id for r in runs}
            sample = store.sample(profile_id)
        finally:
            store.close()
        # 30 s of the shop's 300 records/s (orders and payments together): most of them, not a trickle
        assert sample is not None and set(sample.topics) == set(io.input_topics) and len(sample.records) > 6_000
        for run in runs:
            # the copy's committed output was there and parsed: its latency came from the paid_ms of its records
            assert run.steady is not None and run.steady.p99_ms is not None and run.steady.throughput, run
            assert len(run.recoveries) == 2, run
        recovered = [m.recovery_s for r in runs for m in r.recoveries if m.recovery_s is not None]
        assert len(recovered) >= 4, ("enough recoveries measured to fit a model", recoveries_seen(runs))

        # 3. With the profile, decisions come from the models.
        tuner = Tuner("--job", job_id, *TUNE, "--duration", "40s", "--db", str(profile_db), *sd)
        informed = tuner.wait_for(lambda e: e.get("event") == "decision", 60)
        assert informed["mode"] == "models", informed
        tuner.proc.send_signal(signal.SIGTERM)  # one decision is what this step asks: stopped as a user stops it
        assert tuner.finish(60) == 0

        # 4. Bad input, one line each: an event-time path that matches nothing in the recorded records ...
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

        # 5. The live job ran on, exactly once over everything its load sent, and its group was never chronos's.
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
        stop.set()
        if tuner is not None:
            tuner.kill()
        if load.is_alive():
            load.join(30)
        if flink.job(job_id).state == "RUNNING":
            flink.cancel(job_id)
