"""One controller for many jobs (`chronos tune --jobs`): what it costs per job, whether it holds its cadence, and
three real jobs tuned by one process for ten minutes.

    .venv/bin/python bench/many_jobs.py [--simulate 1,10,50,200] [--simulate-s 150] [--real-minutes 10] [--skip-real]

1. simulated: N jobs whose live readings are replayed from a recorded tune run (tests/fixtures/live_readings,
   through the suite's fakes of chronos's own collector, pacing and retuner: tests/support/replayed_fleet.py), each
   collection taking 20 ms of waiting (a REST call and a broker request), stepped by the controller at the default
   cadence (collect every 5 s, decide every 30 s) for --simulate-s seconds; each N in a process of its own: its CPU
   (user + sys, over the run), its peak RSS, and how late the steps started against their turn.
2. real: a fresh local stack running the demo job, the zones job and the shop job (and a fourth, a zones job chronos
   has no record of), all tuned by one `chronos tune --jobs` for --real-minutes, against a synthetic profile each
   (chronos.profiler.synthetic: the tuner is measured here, not the models). At 25 % of the run the zones
   job's load steps from 150 to 600 events/s for 40 % of it; at 50 % the fourth job is cancelled from outside.
   Reported: each job's cadence changes before and after the step, the cancelled job's `left` line, the tuner's
   CPU and RSS (psutil, every 5 s), and exactly-once for the three (the demo job's counted vehicles, the zones job's
   speeding events against its committed counts, the shop's paid orders).
Writes bench/results/many_jobs.json and prints a table.
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
console = Console(stderr=True)


# -- 1. simulated -------------------------------------------------------------------------------------------------
def simulate(count: int, seconds: float) -> dict[str, Any]:
    """N replayed jobs under the controller, in this process (run it in a fresh one per N)."""
    sys.path.insert(0, str(ROOT))  # the suite's replayed jobs: one definition of the simulation, test and bench
    from chronos.tune.controller import Controller, ControllerSettings
    from chronos.tune.fitting import fit_in_child
    from chronos.tune.loop import LoopSettings
    from tests.support.replayed_fleet import replayed_job

    # The default cadence; the models fitted as the tuner fits them, in a child process (two at a time), the parent
    # never importing scikit-learn: each job's own copy of what came back.
    slots = threading.BoundedSemaphore(2)
    fitted: dict[tuple[object, ...], Any] = {}

    def child_fit(points: Any, seed: int, capacity: float | None, rising: bool) -> Any:
        key = (tuple(points), seed, capacity, rising)
        if key not in fitted:
            with slots:
                fitted[key] = fit_in_child(points, seed, capacity=capacity, rising=rising)
        return copy.deepcopy(fitted[key])

    jobs = [replayed_job(i, latency_s=0.02, settings=LoopSettings(collect_every_s=5, decide_every_s=30),
                         fitter=child_fit) for i in range(count)]
    troubles: list[str] = []

    class Said:
        def joined(self, name: str) -> None:
            return None

        def left(self, name: str, why: str) -> None:
            return None

        def trouble(self, name: str, error: str) -> None:
            troubles.append(f"{name}: {error}")

    controller = Controller(ControllerSettings(step_every_s=5.0, workers=8), Said())
    for job in jobs:
        controller.add(job)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    controller.run(threading.Event(), seconds)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the model fits (those after the start: none here)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    late = controller.lateness()
    decisions = sum(len(job.decisions.records) for job in jobs)
    return {"jobs": count, "seconds": round(elapsed, 1), "cpu_s": round(cpu_s, 2),
            "core_percent": round(100 * cpu_s / elapsed, 2), "core_percent_per_job": round(100 * cpu_s / elapsed / count, 3),
            "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
            "fit_children_cpu_s": round(children.ru_utime + children.ru_stime, 1),
            "sklearn_in_controller": "sklearn" in sys.modules, "steps": late.steps, "skipped": late.skipped,
            "lateness_p50_s": round(late.p50_s, 3), "lateness_p99_s": round(late.p99_s, 3),
            "lateness_max_s": round(late.max_s, 3), "decisions": decisions, "troubles": troubles[:5]}


def simulated(counts: list[int], seconds: float) -> list[dict[str, Any]]:
    rows = []
    for count in counts:
        console.print(f"simulated: {count} jobs for {seconds:g} s ...")
        done = subprocess.run([sys.executable, __file__, "--one-simulation", str(count), "--simulate-s", str(seconds)],
                              capture_output=True, text=True, timeout=seconds + 600, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"simulation of {count} jobs failed: {done.stderr.strip()[-500:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        console.print(f"  {rows[-1]}")
    return rows


# -- 2. real ------------------------------------------------------------------------------------------------------
@dataclass
class PhasedRate:
    """`base` events/s, `high` between `from_s` and `to_s`."""

    base: float
    high: float
    from_s: float
    to_s: float

    def rate_at(self, elapsed_s: float) -> float:
        return self.high if self.from_s <= elapsed_s < self.to_s else self.base


def chronos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def zones_delivery(bootstrap: str, input_topic: str, output_topic: str) -> dict[str, Any]:
    """The zones job's committed counts against the speeding events of its input: every event counted once."""
    from chronos.jobs.shop_delivery import read_committed
    from chronos.jobs.topic_offsets import groupless_consumer

    consumer = groupless_consumer(bootstrap)
    speeding = 0
    try:
        from kafka import TopicPartition

        partitions = [TopicPartition(input_topic, p) for p in sorted(consumer.partitions_for_topic(input_topic))]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    event = json.loads(record.value)
                    if event.get("speed", 0) > 60 and event.get("vehicle_id") != "__flush__":
                        speeding += 1
    finally:
        consumer.close()
    out = read_committed(bootstrap, output_topic)
    keys = Counter((o["key"], o["window_start"]) for o in out)
    counted = sum(int(o["event_count"]) for o in out)
    return {"speeding_events": speeding, "counted": counted, "lost": max(0, speeding - counted),
            "duplicated_windows": sum(n - 1 for n in keys.values() if n > 1), "over_counted": max(0, counted - speeding),
            "exact": counted == speeding and all(n == 1 for n in keys.values())}


def real(minutes: float) -> dict[str, Any]:
    from chronos.flink.distribution import find_distribution
    from chronos.flink.rest import FlinkRestClient
    from chronos.flink.submit import RestSubmitter
    from chronos.jobs.bounded_input import ExperimentInput
    from chronos.jobs.fleet import VehicleFleet
    from chronos.jobs.job_file import load_job_file
    from chronos.jobs.loadgen import KafkaEventSink, run_load
    from chronos.jobs.shipped import own_copy
    from chronos.jobs.shop import ShopTopics, run_shop
    from chronos.jobs.shop_delivery import check_delivery, expected_paid, read_committed
    from chronos.jobs.topics import ensure_topics
    from chronos.model import CheckpointSettings
    from chronos.profiler.synthetic import write_profile
    from chronos.rates import ConstantRate
    from chronos.stack.local_stack import StackOptions, down, up
    from chronos.stack.locations import default_cache_dir

    run_s = minutes * 60
    step_from, step_to, cancel_at = 0.25 * run_s, 0.65 * run_s, 0.5 * run_s
    base = Path(tempfile.mkdtemp(prefix="chronos-many-jobs-"))
    sd = base / "stack"
    state, _ = up(StackOptions(sd, default_cache_dir(), slots=6))
    sdo = ["--stack-dir", str(sd)]
    stop = threading.Event()
    threads: list[threading.Thread] = []
    tuner: subprocess.Popen[str] | None = None
    flink = FlinkRestClient(state.rest_url)
    events: list[dict[str, Any]] = []
    samples: list[tuple[float, float, float]] = []  # (t, cpu s, rss MB)
    try:
        tag = uuid.uuid4().hex[:6]
        zones, outside = (own_copy("speeding_zones.yaml", base, f"{kind}{tag}", parallelism=1) for kind in "zo")
        shop = ROOT / "jobs" / "shop_payments.yaml"
        demo = chronos("job", "submit", "demo", "--parallelism", "1", "--json", *sdo)
        if demo.returncode:
            raise RuntimeError(demo.stderr)
        ids = {"demo": json.loads(demo.stdout)["job_id"]}
        for name, path in (("zones", zones), ("shop", shop)):
            _, io = load_job_file(path, {"bootstrap": state.bootstrap})
            ensure_topics(state.bootstrap, [*io.input_topics, io.output_topic], partitions=2)
            done = chronos("job", "submit", "--file", str(path), "--json", *sdo)
            if done.returncode:
                raise RuntimeError(done.stderr)
            ids[name] = json.loads(done.stdout)["job_id"]
        outside_spec, outside_io = load_job_file(outside, {"bootstrap": state.bootstrap})
        ensure_topics(state.bootstrap, [outside_io.input_topic, outside_io.output_topic], partitions=2)
        ids["outside"] = RestSubmitter(flink, find_distribution().python_jar).submit(outside_spec,
                                                                                    CheckpointSettings(20_000))
        names = {name: flink.job(job_id).name for name, job_id in ids.items()}
        for job_id in ids.values():
            flink.wait_until_running(job_id, timeout_s=180)
        db = base / "chronos.db"
        for name in ("demo", "zones", "shop"):
            write_profile(db, names[name], f"synthetic-{name}")

        counted = ExperimentInput(state.bootstrap, "vehicle-events", "vehicle-stats", rate=200, vehicles=50,
                                  run_id=tag)
        counted.start()
        zones_io = load_job_file(zones, {"bootstrap": state.bootstrap})[1]
        began = time.monotonic()

        def zones_load() -> None:
            sink = KafkaEventSink(state.bootstrap, zones_io.input_topic)
            try:
                run_load(sink, VehicleFleet(200, seed=5), PhasedRate(150, 600, step_from, step_to),
                         duration_s=float("inf"), should_stop=stop.is_set, close_windows=True)
            finally:
                sink.close()

        def outside_load() -> None:
            sink = KafkaEventSink(state.bootstrap, outside_io.input_topic)
            try:
                run_load(sink, VehicleFleet(100, seed=6), ConstantRate(100), duration_s=float("inf"),
                         should_stop=stop.is_set)
            finally:
                sink.close()

        threads = [threading.Thread(target=zones_load, daemon=True),
                   threading.Thread(target=outside_load, daemon=True),
                   threading.Thread(target=lambda: run_shop(state.bootstrap, ConstantRate(150), customers=500, seed=3,
                                                            duration_s=float("inf"), should_stop=stop.is_set), daemon=True)]
        for thread in threads:
            thread.start()
        listed = base / "jobs.yaml"
        listed.write_text(yaml.safe_dump({
            "defaults": {"recovery_s": 60, "latency_p99_ms": 600_000, "interval_min_s": 2, "interval_max_s": 30,
                         "startup_grace_s": 30, "horizon_s": 60, "cooldown_s": 600},
            # the outside job has no output topic chronos knows: no latency target for it
            "jobs": [{"name": name, "job": job_id, **({"policy": {"latency_p99_ms": None}} if name == "outside" else {})}
                     for name, job_id in ids.items()]}))
        tuner = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "tune", "--jobs", str(listed), "--json",
                                  "--db", str(db), "--metrics-port", "-1", "--decide-every", "10s",
                                  "--collect-every", "5s", "--duration", f"{run_s:g}s", *sdo],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        started = time.monotonic()

        def read() -> None:
            assert tuner is not None and tuner.stdout is not None
            for line in tuner.stdout:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                event["t"] = round(time.monotonic() - started, 1)
                events.append(event)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        process = psutil.Process(tuner.pid)
        cancelled = False
        while tuner.poll() is None:
            elapsed = time.monotonic() - started
            try:
                cpu = process.cpu_times()
                samples.append((round(elapsed, 1), cpu.user + cpu.system, process.memory_info().rss / 2**20))
            except psutil.Error:
                pass
            if not cancelled and elapsed >= cancel_at:
                flink.cancel(ids["outside"])
                cancelled = True
                console.print(f"  {elapsed:.0f} s: the outside job cancelled")
            time.sleep(5)
        reader.join(30)
        stderr = tuner.stderr.read() if tuner.stderr else ""
        stop.set()
        for thread in threads:
            thread.join(60)
        checks = {"demo": _asdict(counted.finish(timeout_s=240)),
                  "zones": zones_delivery(state.bootstrap, zones_io.input_topic, zones_io.output_topic)}
        expected, orders = expected_paid(state.bootstrap, ShopTopics())
        checks["shop"] = _asdict(check_delivery(expected, read_committed(state.bootstrap, "paid-orders")))
        checks["shop"]["orders"] = orders
        return _summary(events, samples, checks, ids, names, tuner.returncode, stderr, run_s, step_from, step_to,
                        cancel_at, time.monotonic() - began)
    finally:
        stop.set()
        if tuner is not None and tuner.poll() is None:
            tuner.send_signal(signal.SIGTERM)
            try:
                tuner.wait(60)
            except subprocess.TimeoutExpired:
                tuner.kill()
        flink.close()
        down(sd, purge=True)


def _asdict(value: Any) -> dict[str, Any]:
    from dataclasses import asdict, is_dataclass

    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else dict(value)


def _summary(events: list[dict[str, Any]], samples: list[tuple[float, float, float]], checks: dict[str, Any],
             ids: dict[str, str], names: dict[str, str], code: int | None, stderr: str, run_s: float,
             step_from: float, step_to: float, cancel_at: float, wall_s: float) -> dict[str, Any]:
    jobs = {}
    for name in ids:
        mine = [e for e in events if e.get("job_name") == name]
        cadences = [(e["t"], e.get("to_ms")) for e in mine if e["event"] == "cadence"]
        retunes = [(e["t"], e.get("interval_ms")) for e in mine if e["event"] == "retune"]
        decisions = [e for e in mine if e["event"] == "decision"]
        jobs[name] = {
            "flink_name": names[name], "job_id": ids[name],
            "cadence_changes_before_step": [c for c in cadences if c[0] < step_from],
            "cadence_changes_during_step": [c for c in cadences if step_from <= c[0] < step_to],
            "cadence_changes_after_step": [c for c in cadences if c[0] >= step_to],
            "restarts": retunes, "decisions": len(decisions),
            "actions": dict(Counter(e.get("action") for e in decisions)),
            "left": next((e for e in events if e["event"] == "left" and e.get("job_name") == name), None),
            "troubles": [e["text"] for e in events if e["event"] == "trouble" and e.get("job_name") == name][:5],
            # what it said besides its readings, in order (decisions, cadence changes, retunes, messages)
            "said": [f"{e['t']:.0f} s {e['event']}: {e.get('text', '')}"[:300] for e in mine
                     if e["event"] != "reading" and (e["event"] != "decision" or e.get("action") != "keep")],
        }
    cpu = [(t, c) for t, c, _ in samples]
    per_minute = []
    for (t0, c0), (t1, c1) in zip(cpu, cpu[12:], strict=False):  # a minute apart (samples every 5 s)
        per_minute.append(round(100 * (c1 - c0) / (t1 - t0), 2))
    summary = next((e for e in events if e["event"] == "summary"), None)
    return {
        "run_s": run_s, "load_step_s": [step_from, step_to], "zones_rates": [150, 600], "cancelled_at_s": cancel_at,
        "tuner_exit": code, "tuner_stderr_tail": stderr.strip()[-400:], "wall_s": round(wall_s, 1), "jobs": jobs,
        "tuner_cpu_s": round(cpu[-1][1] - cpu[0][1], 1) if len(cpu) > 1 else None,
        "tuner_core_percent": round(100 * (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]), 2) if len(cpu) > 1 else None,
        "tuner_core_percent_per_minute": per_minute,
        "tuner_rss_mb": {"first": round(samples[0][2], 1), "max": round(max(s[2] for s in samples), 1),
                         "last": round(samples[-1][2], 1)} if samples else None,
        "lateness": None if summary is None else {k: summary[k] for k in ("steps", "skipped_steps", "lateness_p50_s",
                                                                          "lateness_p99_s", "lateness_max_s")},
        "exactly_once": checks,
    }


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # the stack and the tuner are stopped on the way out


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulate", default="1,10,50,200")
    parser.add_argument("--simulate-s", type=float, default=150.0)
    parser.add_argument("--real-minutes", type=float, default=10.0)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--skip-simulated", action="store_true")
    parser.add_argument("--one-simulation", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_simulation is not None:
        print(json.dumps(simulate(args.one_simulation, args.simulate_s)))
        return 0
    out = RESULTS / "many_jobs.json"
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    results["date"] = time.strftime("%Y-%m-%d %H:%M")
    results["machine"] = f"{psutil.cpu_count()} cores"
    if not args.skip_simulated:
        results["simulated"] = simulated([int(n) for n in args.simulate.split(",")], args.simulate_s)
        table = Table("jobs", "core % (all)", "core % per job", "peak RSS MB", "steps", "skipped", "late p99 s",
                      "late max s", title="simulated jobs, one controller")
        for row in results["simulated"]:
            table.add_row(str(row["jobs"]), str(row["core_percent"]), str(row["core_percent_per_job"]),
                          str(row["peak_rss_mb"]), str(row["steps"]), str(row["skipped"]), str(row["lateness_p99_s"]),
                          str(row["lateness_max_s"]))
        console.print(table)
    out.write_text(json.dumps(results, indent=1) + "\n")
    if not args.skip_real:
        results["real"] = real(args.real_minutes)
        out.write_text(json.dumps(results, indent=1) + "\n")
        console.print_json(json.dumps({k: v for k, v in results["real"].items() if k != "jobs"}))
        for name, job in results["real"]["jobs"].items():
            console.print(f"{name}: {json.dumps(job)[:600]}")
    console.print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
