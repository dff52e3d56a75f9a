"""Any user's job end to end, measured on the third shipped job (jobs/shop_payments.yaml).

    .venv/bin/python bench/any_job.py [--rate 1000] [--record 60] [--skip-profile]

On a fresh local stack (2 slots): the shop job submitted from its job file, fed by `run_shop` at `--rate`
records/s (orders and payments together).
1. fidelity: `--record` s of its live input recorded (chronos's own recorder), replayed for as long into two
   fresh topics standing for the live ones at the recorded rate; the copies read back: the replayed rate against
   the recorded one, and the shares of the sample's 100 most frequent keys (goal: rate within 5 %, shares within 10 %).
2. profile: `chronos profile run` with its defaults (input recorded for 30 s and replayed, `--parallel auto`, 15 min
   budget, one worst-case TaskManager kill per run): wall time, runs, faults recovered, and the models' held-out
   error (recovery and latency, k-fold as the tuner fits them).
Writes bench/results/any_job.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from tune_controller import RESULTS, bench_stack

from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.input_recorder import TopicRecorder
from chronos.jobs.job_file import load_job_file
from chronos.jobs.replay_load import ReplayPlan, run_replay
from chronos.jobs.shop import ShopTopics, run_shop
from chronos.jobs.topics import delete_topics, ensure_topics
from chronos.model import CheckpointSettings
from chronos.optimizer.models import fit_best
from chronos.profiler.input_sample import record_sample
from chronos.profiler.observations import profile_observations
from chronos.profiler.replay import replay_fidelity
from chronos.profiler.store import ProfileStore
from chronos.rates import ConstantRate

console = Console(stderr=True)
JOB_FILE = Path(__file__).parents[1] / "jobs" / "shop_payments.yaml"


def read_keys(bootstrap: str, topics: list[str]) -> tuple[Counter[bytes | None], int, int]:
    """Keys of every record in the topics, and the first and last record timestamps (ms)."""
    recorder = TopicRecorder(bootstrap, tuple(topics), from_start=True)
    try:
        ends = recorder.end_offsets()
        keys: Counter[bytes | None] = Counter()
        first, last = None, 0
        while any(recorder.positions()[p] < end for p, end in ends.items()):
            for record in recorder.poll(1.0):
                keys[record.key] += 1
                first = record.timestamp_ms if first is None else min(first, record.timestamp_ms)
                last = max(last, record.timestamp_ms)
        return keys, first or 0, last
    finally:
        recorder.close()


def fidelity_section(bootstrap: str, live: ShopTopics, window_s: float) -> dict[str, Any]:
    console.print(f"recording {window_s:g} s of the live input")
    recorder = TopicRecorder(bootstrap, (live.orders, live.payments))
    try:
        sample = record_sample(recorder, (live.orders, live.payments), window_s)
    finally:
        recorder.close()
    target = statistics.mean(sample.trace.rates)
    copies = [f"{live.orders}-replay-{uuid.uuid4().hex[:6]}", f"{live.payments}-replay-{uuid.uuid4().hex[:6]}"]
    ensure_topics(bootstrap, copies, partitions=2)
    stop = threading.Event()
    plan = ReplayPlan(bootstrap, sample, ((live.orders, copies[0]), (live.payments, copies[1])), ConstantRate(target),
                      ("$.placed_at", "$.payment.at_ms"), duration_s=window_s)
    console.print(f"replaying {len(sample.records):,} records at {target:,.0f}/s for {window_s:g} s")
    started = time.monotonic()
    reports = run_replay(plan, stop)
    elapsed = time.monotonic() - started
    keys, first_ms, last_ms = read_keys(bootstrap, copies)
    delete_topics(bootstrap, copies)
    replayed = sum(keys.values())
    fidelity = replay_fidelity(sample, keys, target, replayed / window_s)
    return {"window_s": window_s, "recorded_records": sample.seen, "sample_records": len(sample.records),
            "sample_keys": len(sample.key_shares(10**9)), "replayed_records": replayed,
            "replay_wall_s": round(elapsed, 1), "replay_span_s": round((last_ms - first_ms) / 1000, 1),
            "sent_per_worker": [r.sent for r in reports], **asdict(fidelity)}


def profile_section(sd: str, job_id: str) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "chronos.cli.main", "profile", "run", "--job", job_id, "--json",
                           "--stack-dir", sd], capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - started
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    outcome = json.loads(done.stdout)
    store = ProfileStore(Path(sd) / "profiles.db")
    try:
        runs = store.runs(outcome["profile_id"])
    finally:
        store.close()
    observed = profile_observations(runs)  # the points the tuner fits, repeats included
    models = {}
    for name, observations in (("recovery", observed.recovery), ("latency", observed.latency)):
        if len(observations) >= 4:
            report = fit_best(observations, seed=0).report
            models[name] = {"family": report.family, "held_out_mape": round(report.held_out_mape, 4),
                            "observations": report.observations}
    return {"wall_s": round(wall, 1), "outcome": outcome, "models": models,
            "runs": [{"interval_s": r.config.interval_ms / 1000, "status": r.status,
                      "p99_ms": r.steady.p99_ms if r.steady else None,
                      "recoveries_s": [m.recovery_s for m in r.recoveries]} for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--record", type=float, default=60)
    parser.add_argument("--skip-profile", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"rate": args.rate}
    with bench_stack("chronos-bench-anyjob-") as (state, stack_dir):
        sd = str(stack_dir)
        spec, io = load_job_file(JOB_FILE, {"bootstrap": state.bootstrap})
        ensure_topics(state.bootstrap, [*io.input_topics, io.output_topic], partitions=2)
        with FlinkRestClient(state.rest_url) as client:
            job_id = RestSubmitter(client, find_distribution().python_jar).submit(spec, CheckpointSettings(10_000))
            client.wait_until_running(job_id, timeout_s=120)
        adopted = subprocess.run([sys.executable, "-m", "chronos.cli.main", "job", "adopt", job_id, "--file",
                                  str(JOB_FILE), "--stack-dir", sd], capture_output=True, text=True)
        assert adopted.returncode == 0, adopted.stderr
        stop = threading.Event()
        live = ShopTopics()
        load = threading.Thread(target=run_shop, args=(state.bootstrap, ConstantRate(args.rate)),
                                kwargs={"topics": live, "should_stop": stop.is_set, "duration_s": 7200}, daemon=True)
        load.start()
        try:
            time.sleep(20)
            results["fidelity"] = fidelity_section(state.bootstrap, live, args.record)
            console.print(results["fidelity"])
            if not args.skip_profile:
                results["profile"] = profile_section(sd, job_id)
                console.print(results["profile"])
        finally:
            stop.set()
            load.join(30)
    (RESULTS / "any_job.json").write_text(json.dumps(results, indent=2, default=str))
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
