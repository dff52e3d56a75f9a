"""Side by side: chronos against static intervals, Young/Daly and a Khaos-style optimizer, on
the same machine, the same workload trace and the same seeded failure schedule, per scenario.

    .venv/bin/python bench/side_by_side.py --scenario idle|busy|own [--quick] [--capacity EV_S] [--arm-s S] [--arms ...]
        [--profile-db DB | --profile-only] [--latency-target S --recovery-target S [--targets-why TEXT]] [--out DIR]
        [--from-json F [--from-json F ...]]

First one `chronos profile run` on a fresh stack running the scenario's own job (its input recorded at the
scenario's middle rate and replayed at its lowest, middle and highest): every model-based arm gets that profile;
the live job's p99 before and while the copies run is the profiling's interference. Busy: the targets come from
the profile's models (`chronos.benchmarks.profile_grid`), and so does the best static interval. Then each arm from
the same state: a fresh local stack (Kafka + Flink), the job submitted at the arm's starting interval, the profile
in the tuner's database, `chronos tune` with the arm's strategy for the whole arm, the load trace (idle and own: a
step, then a daily-like swing; busy: one compressed day between 40 and 85 % of the capacity) and TaskManagers
SIGKILLed at the schedule's offsets. Exactly-once: a counted vehicle stream rides along (idle, busy), or the shop's
paid orders are checked against its own input topics (own). Written to DIR (default
bench/results/side_by_side_2/SCENARIO): results.md, results.csv, arms.json, profile.json, profile.db,
summary.png, frontier.png, timeline.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.console import Console

from chronos.benchmarks.profile_grid import GridPoint, Targets, best_static, grid, static_verdicts, suggest_targets
from chronos.benchmarks.side_by_side import (
    CHRONOS_ARMS,
    ArmFigures,
    ArmRecord,
    SavedRun,
    Scenario,
    busy_scenario,
    is_static,
    merge_runs,
    qos_s,
    scenario,
    summarise,
    table,
    verdict,
)
from chronos.cli.wiring import job_records, live_signals
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import QUIET_S, ExperimentInput
from chronos.jobs.shop import ShopTopics
from chronos.jobs.shop_delivery import ShopDelivery, check_delivery, expected_paid, read_committed
from chronos.optimizer.models import fit_best
from chronos.profiler.observations import profile_observations
from chronos.profiler.store import ProfileStore
from chronos.stack.faults import KillTaskManager
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.state import load_state
from chronos.tune.fitting import ModelBook

CACHE = default_cache_dir()  # as root /var/cache/chronos, readable by the service user
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)

# Flink's docs set no default interval; the operator's and the docs' examples, and most production guides,
# checkpoint every 30 s to a few minutes. 30 s is the docs-typical value taken here (examples in the
# Flink Kubernetes Operator and "Checkpointing" pages), between the two static extremes.
DOCS_TYPICAL_S = 30
BASELINE = "static-60"  # the longest interval run: overhead and throughput are relative to it
ARMS: dict[str, dict[str, Any]] = {
    "static-10": {"start_s": 10, "args": ["--strategy", "static", "--static-interval", "10s"]},
    "static-60": {"start_s": 60, "args": ["--strategy", "static", "--static-interval", "60s"]},
    f"static-{DOCS_TYPICAL_S}": {"start_s": DOCS_TYPICAL_S,
                                 "args": ["--strategy", "static", "--static-interval", f"{DOCS_TYPICAL_S}s"]},
    # Young/Daly with the checkpoint cost the tuner measures and the MTBF the failure schedule implies.
    "young-daly": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "daly"], "mtbf_from_schedule": True},
    # Khaos as published: OLS models fitted once, ratios of median predictions to the targets (no margin), a
    # decision every 300 s (the full run), only changes of 5 s or more. One departure: its latency model is
    # scaled to the live job as chronos's is. Khaos profiles the job itself; the profile here is older than the
    # job (its p99 is 4-5x the live one), and Khaos should not lose for a profile it would not have had.
    "khaos": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "khaos"], "khaos": True,
              "policy": {"safety_margin": 0.0, "conservative": False, "calibrate_latency": True,
                         "min_change_rel": 0.0, "min_change_abs_s": 5.0}},
    "chronos": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "chronos"]},
    "chronos-restart": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "chronos", "--realize", "restart"]},
    # chronos paced, with the recovery settings it proposes in force first (`chronos recommend --apply`: heartbeats
    # from the measured pauses, restart delay, a spare TaskManager), and the same settings under a static interval,
    # so that the report separates what the settings give from what the tuning gives.
    "chronos-settings": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "chronos"], "recovery_settings": True},
    "static-10-settings": {"start_s": 10, "args": ["--strategy", "static", "--static-interval", "10s"],
                           "recovery_settings": True},
    # The fallback rule before the ceiling rule: the job's own interval follows the forecast peak (a restart per rise).
    "chronos-follow": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "chronos"],
                       "policy": {"fallback_rule": "follow"}},
}


@dataclass(frozen=True)
class BenchJob:
    """What a scenario runs: the job (`chronos job submit` arguments), its load generator (`chronos load ...`
    without a rate; `trace_args` make it take a trace file), how its profile runs on the bench's own stack (copies
    at a time; whether the live job keeps its input while the copies run, so that the profile's interference on it
    is measured, or is paused once its input is recorded: a busy job on two cores leaves no room for copies beside
    it, a profiling host's stand-in), and how exactly-once is checked (a counted vehicle stream riding along, or
    the shop's own topics)."""

    submit: tuple[str, ...]
    load: tuple[str, ...]
    trace_args: tuple[str, ...]
    profile_parallel: int
    live_during_profile: bool
    shop: bool = False
    profile_intervals: str = "2s..60s"  # `chronos profile run --intervals`

    def load_at(self, rate: float, duration_s: float | None = None) -> list[str]:
        return [*self.load, "--rate", f"{rate:.0f}", *([] if duration_s is None else ["--duration", f"{duration_s:g}"])]

    def load_trace(self, trace: Path) -> list[str]:
        return [*self.load, *self.trace_args, "--trace", str(trace)]


VEHICLES = ("load", "run", "--workers", "2")
BENCH_JOBS = {
    "idle": BenchJob(("demo", "--parallelism", "1"), VEHICLES, ("--profile", "csv"), 2, True),
    # The demo job made heavy enough for the load generator to drive it to 85 % of its capacity on this machine:
    # speeds averaged in a Python UDF, RocksDB with incremental checkpoints, 100,000 vehicles (keyed state).
    # Its profile explores 2-30 s: one run at a time, a run at 40-60 s costs 5-6 of the 14 minutes (two intervals to
    # wait for, two to measure p99 over, one to reach the worst moment), and four runs are the fewest a model takes.
    "busy": BenchJob(("demo", "--parallelism", "1", "--python-udf", "--state-backend", "rocksdb", "--incremental"),
                     (*VEHICLES, "--vehicles", "100000"), ("--profile", "csv"), 1, False, profile_intervals="2s..30s"),
    # The shop job, known to chronos by its job file alone, fed by its own generator (two topics, skewed keys).
    "own": BenchJob(("--file", str(Path(__file__).parent.parent / "jobs" / "shop_payments.yaml")), ("load", "shop"),
                    (), 2, True, shop=True),
}
SHOP_OUTPUT = "paid-orders"  # jobs/shop_payments.yaml
NO_BACKLOG_ARM = ("Flink's own adaptivity (`execution.checkpointing.interval-during-backlog`, FLIP-309) has no arm: the "
                  "Kafka source reports no backlog, so on these jobs it would be a static interval.")
STATIC = re.compile(r"static-(\d+)(-settings)?")


def arm_spec(name: str) -> dict[str, Any] | None:
    """The named arm; any `static-N` and `static-N-settings` (N seconds) beside the fixed ones."""
    if name in ARMS:
        return ARMS[name]
    m = STATIC.fullmatch(name)
    if m is None or not 1 <= int(m.group(1)) <= 600:
        return None
    spec: dict[str, Any] = {"start_s": int(m.group(1)),
                            "args": ["--strategy", "static", "--static-interval", f"{m.group(1)}s"]}
    if m.group(2):
        spec["recovery_settings"] = True
    return spec


def trace_rates(sc: Scenario) -> tuple[float, float, float]:
    """The scenario's lowest, middle and highest input rate (after its step)."""
    rates = [sc.rate(t) for t in range(int(sc.step_at_s), int(sc.arm_s) + 1)]
    return min(rates), (min(rates) + max(rates)) / 2, max(rates)


PROFILE_LIVE_INTERVAL_S = 10  # the live job's interval while it is profiled: a p99 that shows interference
RECORD_S, BEFORE_S, WARM_S = 60, 60, 30
GRID_INTERVALS_S = (2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)


def profile_step(sc: Scenario, job: BenchJob, base: Path, out: Path, budget: str) -> Path:
    """One `chronos profile run` on the bench's own stack and job (its input recorded at the scenario's middle
    rate, replayed at the scenario's lowest, middle and highest), the live job's p99 measured for a minute before
    and while the copies run. Writes out/profile.db (what every model-based arm is given) and out/profile.json."""
    sd = base / "profile"
    shutil.rmtree(sd, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    db = out / "profile.db"
    db.unlink(missing_ok=True)
    low, mid, high = trace_rates(sc)
    loads = f"{low / mid:.2f},1,{high / mid:.2f}"
    console.print(f"[bold]profile[/]: fresh stack; live input {mid:,.0f} ev/s, copies at {loads} of it")
    state, _ = up(StackOptions(sd, CACHE))
    sdo = ["--stack-dir", str(sd)]
    client = FlinkRestClient(state.rest_url)
    signals = None
    try:
        submitted = chronos("job", "submit", *job.submit, "--interval", f"{PROFILE_LIVE_INTERVAL_S}s", "--json",
                            *sdo)
        if submitted.returncode:
            raise RuntimeError(submitted.stderr.strip())
        job_id = json.loads(submitted.stdout)["job_id"]
        record = job_records(sd).get(job_id)
        assert record is not None
        duration = None if job.live_during_profile else WARM_S + BEFORE_S + RECORD_S + 20
        load = chronos(*job.load_at(mid, duration), "--background", *sdo)
        if load.returncode:
            raise RuntimeError(load.stderr.strip())
        signals = live_signals(client, sd, record)
        time.sleep(WARM_S)
        before_from = int(time.time() * 1000)
        time.sleep(BEFORE_S)
        started = time.monotonic()
        started_ms = int(time.time() * 1000)
        # Read now: the observer keeps a bounded number of latencies, and a busy job's output pushes these out.
        before = signals.latencies_between(before_from, started_ms)
        ran = chronos("profile", "run", "--record", f"{RECORD_S}s", "--loads", loads, "--parallel",
                      str(job.profile_parallel), "--intervals", job.profile_intervals, "--budget", budget,
                      "--db", str(db), "--json", *sdo, timeout=3600)
        wall_s = time.monotonic() - started
        ended_ms = int(time.time() * 1000)
        if ran.returncode:
            raise RuntimeError(f"chronos profile run: {ran.stderr.strip()[-300:]}")
        during = signals.latencies_between(started_ms + (RECORD_S + 10) * 1000, ended_ms)
        report = chronos("profile", "report", "--models", "--json", "--db", str(db), *sdo, timeout=600)
        summary = {
            "command": f"chronos profile run --record {RECORD_S}s --loads {loads} --parallel {job.profile_parallel} "
                       f"--intervals {job.profile_intervals} --budget {budget}",
            "job": " ".join(job.submit), "load": " ".join(job.load), "live_rate": round(mid),
            "live_during_profile": job.live_during_profile, "wall_s": round(wall_s, 1),
            "run": _json_or_text(ran.stdout), "report": _json_or_text(report.stdout),
            "live_p99_before_s": _p99(before), "live_p99_during_s": _p99(during) if job.live_during_profile else None,
            "live_outputs_before": len(before), "live_outputs_during": len(during),
        }
        (out / "profile.json").write_text(json.dumps(summary, indent=1))
    finally:
        if signals is not None:
            signals.close()
        chronos("load", "stop", *sdo)
        client.close()
        down(sd, purge=True)
    return db


def _p99(latencies_ms: list[float]) -> float | None:
    if len(latencies_ms) < 20:
        return None
    return round(statistics.quantiles(latencies_ms, n=100)[98] / 1000, 2)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text[-2000:]


def profile_grid(db: Path, sc: Scenario) -> tuple[GridPoint, ...]:
    """The profile's models (fitted as the tuner fits them, before any live recovery), at every interval of the
    grid and the scenario's lowest, middle and highest rate."""
    store = ProfileStore(db)
    try:
        observations = profile_observations(store.runs())
    finally:
        store.close()
    models = ModelBook(observations, fitter=lambda obs, seed, capacity, rising: fit_best(
        obs, seed=seed, capacity=capacity, rising=rising)).models

    def recovery(i: float, r: float) -> float | None:
        return None if models.recovery is None else round(models.recovery.predict(i, r).median, 1)

    def p99(i: float, r: float) -> float | None:
        return None if models.latency is None else round(models.latency.predict(i, r).median / 1000, 1)

    return grid(recovery, p99, GRID_INTERVALS_S, trace_rates(sc))


def chronos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class CheckpointLedger(threading.Thread):
    """Every completed checkpoint of the arm's jobs, collected from REST history as it goes (Flink
    keeps only the last few in its history)."""

    def __init__(self, client: FlinkRestClient) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.jobs: list[str] = []
        self.seen: dict[tuple[str, int], float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(3):
            for job in list(self.jobs):
                try:
                    for c in self.client.checkpoints(job).history:
                        if c.status == "COMPLETED" and not c.is_savepoint:
                            self.seen[(job, c.id)] = c.end_to_end_duration / 1000
                except Exception:  # noqa: BLE001 - a job being restarted answers nothing for a moment
                    continue



class Flusher(threading.Thread):
    """Triggers a checkpoint every few seconds while the exactly-once count waits for its last records: the
    exactly-once sink shows them only at a commit, and a 60 s interval would make every arm wait for it."""

    def __init__(self, rest_url: str, job_id: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{rest_url.rstrip('/')}/jobs/{job_id}/checkpoints"
        self.stop = threading.Event()

    def __enter__(self) -> Flusher:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.join(10)

    def run(self) -> None:
        with httpx.Client(timeout=5) as http:
            while not self.stop.wait(4):
                try:
                    http.post(self.url, json={"checkpointType": "CONFIGURED"})
                except httpx.HTTPError:
                    continue


class Stopwatch:
    """Where an arm's wall time goes (the quick variant must fit in 20 minutes)."""

    def __init__(self, arm: str) -> None:
        self.arm, self.last = arm, time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self.last, 1)
        self.last = now


def run_arm(name: str, spec: dict[str, Any], sc: Scenario, base: Path, job: BenchJob,
            profile_db: Path) -> tuple[ArmRecord, dict[str, float]]:
    sd = base / name
    shutil.rmtree(sd, ignore_errors=True)
    watch = Stopwatch(name)
    console.print(f"[bold]{name}[/]: fresh stack")
    state, _ = up(StackOptions(sd, CACHE))
    sdo = ["--stack-dir", str(sd)]
    if spec.get("recovery_settings"):
        applied = chronos("recommend", "--watch", "20s", "--apply", "--json", *sdo, timeout=600)
        if applied.returncode:
            down(sd, purge=True)
            raise RuntimeError(f"chronos recommend --apply: {applied.stderr.strip()[-300:]}")
        state = load_state(sd) or state
        watch.lap("recovery settings applied")
    client = FlinkRestClient(state.rest_url)
    counted: ExperimentInput | None = None
    tuner: subprocess.Popen[str] | None = None
    ledger = CheckpointLedger(client)
    events: list[dict[str, Any]] = []
    injected: list[int] = []
    started_ms = int(time.time() * 1000)
    delivery = (0, 0, 0)
    settled = True
    error = ""
    try:
        watch.lap("stack up")
        submitted = chronos("job", "submit", *job.submit, "--interval", f"{spec['start_s']}s", "--json", *sdo)
        if submitted.returncode:
            raise RuntimeError(submitted.stderr.strip())
        job_id = json.loads(submitted.stdout)["job_id"]
        ledger.jobs.append(job_id)
        db = sd / "chronos.db"
        shutil.copyfile(profile_db, db)  # the bench's own profile of this job: every arm gets the same models
        trace = sd / "trace.csv"
        trace.write_text("seconds,events_per_second\n" + "".join(
            f"{t},{sc.rate(t):.0f}\n" for t in range(0, int(sc.arm_s) + 60, 5)))
        every = sc.khaos_every_s if spec.get("khaos") else sc.decide_every_s
        config: list[str] = []
        policy = dict(spec.get("policy", {}))
        if spec.get("mtbf_from_schedule"):
            policy["mtbf_s"] = sc.arm_s / len(sc.failures_s)
        if policy:
            (sd / "policy.yaml").write_text(json.dumps(policy))  # JSON is YAML
            config = ["--config", str(sd / "policy.yaml")]
        tuner = subprocess.Popen(
            [sys.executable, "-m", "chronos.cli.main", "tune", "--json", "--job", job_id, "--latency-p99",
             f"{sc.latency_target_s:g}s", "--recovery", f"{sc.recovery_target_s:g}s", *spec["args"],
             "--interval-min", "2s", "--interval-max", "120s", "--decide-every", f"{every:g}s", "--collect-every", "2s",
             "--cooldown", f"{sc.cooldown_s:g}s", "--startup-grace", f"{sc.grace_s:g}s", "--horizon", "2min",
             "--duration", f"{sc.arm_s:.0f}s", "--db", str(db), "--metrics-port", "-1", *config, *sdo],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        reader = threading.Thread(target=lambda: _read(tuner, events), daemon=True)
        reader.start()
        # The arm's clock starts when the tuner watches (it fits its models first): load, kills and the tuner's
        # --duration then cover the same seconds in every arm.
        deadline = time.monotonic() + 180
        while not any(e.get("event") == "reading" for e in events):
            if tuner.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the tuner never started watching: " + (tuner.stderr.read() if tuner.stderr else "")[-300:])
            time.sleep(0.2)
        watch.lap("tuner fitted and watching")
        if not job.shop:
            counted = ExperimentInput(state.bootstrap, "vehicle-events", "vehicle-stats", rate=300, vehicles=50,
                                      run_id=uuid.uuid4().hex[:6])
            counted.start()
        started_ms = int(time.time() * 1000)
        load = chronos(*job.load_trace(trace), "--background", *sdo)
        if load.returncode:
            raise RuntimeError(load.stderr.strip())
        ledger.start()
        t0 = time.monotonic() - (time.time() * 1000 - started_ms) / 1000
        pending = list(sc.failures_s)
        while tuner.poll() is None:
            elapsed = time.monotonic() - t0
            if pending and elapsed >= pending[0]:
                injected.append(KillTaskManager(sd).inject().injected_wall_ms)
                console.print(f"  {name}: TaskManager killed at {elapsed:.0f} s")
                pending.pop(0)
            for e in events:
                if e.get("event") == "retune" and e.get("new_job_id") and e["new_job_id"] not in ledger.jobs:
                    ledger.jobs.append(e["new_job_id"])
            time.sleep(0.5)
        reader.join(30)
        ledger.stop.set()
        watch.lap("arm")
        if tuner.returncode:
            stderr = tuner.stderr.read() if tuner.stderr else ""
            raise RuntimeError(f"chronos tune exited {tuner.returncode}: {stderr.strip()[-300:]}")
        chronos("load", "stop", *sdo)
        with Flusher(state.rest_url, ledger.jobs[-1]):
            if counted is not None:
                checked = counted.finish(timeout_s=180)
                delivery = (checked.lost, checked.duplicated, checked.input_events)
                settled = checked.settled
                watch.laps["of the check: input topic read"] = round(counted.input_read_s or 0.0, 1)
            else:
                shop, settled = shop_delivery(state.bootstrap, timeout_s=180)
                delivery = (shop.lost, shop.duplicated, shop.expected)
        watch.lap("exactly-once check")
    except Exception as exc:  # noqa: BLE001 - an arm that breaks is reported, the others still run
        error = f"{type(exc).__name__}: {exc}"[:300]
        console.print(f"[red]{name} failed: {error}[/]")
    finally:
        ledger.stop.set()
        if tuner is not None and tuner.poll() is None:
            tuner.kill()
        if counted is not None:
            counted.close()
        chronos("load", "stop", *sdo)
        client.close()
        down(sd, purge=True)
        watch.lap("stack down")
    record = ArmRecord(name, started_ms, tuple(events), tuple(injected), tuple(ledger.seen.values()),
                       delivery[0], delivery[1], delivery[2], error, settled)
    console.print(f"  {name}: {watch.laps}")
    return record, watch.laps


def shop_delivery(bootstrap: str, timeout_s: float) -> tuple[ShopDelivery, bool]:
    """The shop's paid orders against its own input topics, once the output has caught up (or the time is up); and
    whether it had settled: a result that still changed within the last QUIET_S is a job catching up, not a loss."""
    expected, _ = expected_paid(bootstrap, ShopTopics())
    deadline = time.monotonic() + timeout_s
    previous, changed_at = None, time.monotonic()
    while True:
        result = check_delivery(expected, read_committed(bootstrap, SHOP_OUTPUT))
        if result != previous:
            previous, changed_at = result, time.monotonic()
        if result.exact or time.monotonic() > deadline:
            return result, result.exact or time.monotonic() - changed_at >= QUIET_S
        time.sleep(5)


def _read(proc: subprocess.Popen[str], events: list[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue


def model_error(figures: list[ArmFigures], profile_db: Path | None) -> dict[str, Any]:
    """chronos's and a Khaos-style OLS recovery model, fitted on the bench's profile only, against every recovery
    measured in this run, timed from the kill as the profile timed its own."""
    if profile_db is None or not profile_db.exists():
        return {"failures": 0, "why": "no profile database beside the results"}
    store = ProfileStore(profile_db)
    try:
        observations = profile_observations(store.runs())
    finally:
        store.close()
    obs = list(observations.recovery)
    if len(obs) < 3:
        return {"failures": 0, "why": f"{len(obs)} recoveries in the profile"}
    # As the tuner fits them: with the capacity the profile's catch-ups measured (the phase law competes), rising.
    model = fit_best(obs, seed=0, capacity=observations.capacity, rising=True)
    khaos = fit_best(obs, seed=0, families=("linear",))
    rows = [(r.from_fault_s, model.predict(r.interval_s, r.rate).median, khaos.predict(r.interval_s, r.rate).median)
            for f in figures for r in f.recoveries if r.from_fault_s and r.interval_s]
    if not rows:
        return {"failures": 0}

    def mape(col: int) -> float:
        return round(statistics.fmean(abs(r[col] - r[0]) / r[0] for r in rows), 3)

    return {"failures": len(rows), "family": model.report.family, "chronos_mape": mape(1), "khaos_ols_mape": mape(2),
            "profile_held_out_mape": round(model.report.held_out_mape or 0.0, 3),
            "measured_s": [round(r[0], 1) for r in rows], "predicted_s": [round(r[1], 1) for r in rows]}


def write_outputs(out: Path, records: list[ArmRecord], sc: Scenario, quick: bool, laps: dict[str, Any],
                  context: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    figures = [summarise(r, sc) for r in records]
    rows = table(figures, BASELINE)
    errors = model_error(figures, out / "profile.db")
    lines = verdict(figures, sc.name)
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    header = "| " + " | ".join(rows[0]) + " |\n|" + "---|" * len(rows[0]) + "\n"
    body = "".join("| " + " | ".join(str(v) for v in row.values()) + " |\n" for row in rows)
    (out / "results.md").write_text(
        f"# Side by side: {sc.name} ({'quick' if quick else 'full'}, {time.strftime('%Y-%m-%d %H:%M')})\n\n"
        f"Scenario: {json.dumps(asdict(sc))}\n\n" + profile_section(out, context) + f"\n{header}{body}\n"
        + "".join(f"- {line}\n" for line in lines)
        + f"\nRecovery models (fitted on the profile only) on this run's recoveries: {json.dumps(errors)}\n"
        + f"\n{NO_BACKLOG_ARM}\n\nWall time per arm (s): {json.dumps(laps)}\n")
    (out / "arms.json").write_text(json.dumps({"scenario": asdict(sc), "quick": quick, "laps": laps,
                                               "context": context, "records": [asdict(r) for r in records]},
                                              indent=1))
    plot_summary(out / "summary.png", figures)
    plot_frontier(out / "frontier.png", figures)
    plot_timelines(out / "timeline.png", figures, sc)


def profile_section(out: Path, context: dict[str, Any]) -> str:
    """The profile the models came from, what it did to the live job, and why the targets are what they are."""
    text = ""
    path = out / "profile.json"
    if path.exists():
        p = json.loads(path.read_text())
        report = p.get("report") if isinstance(p.get("report"), dict) else {}
        models = {k: v for k, v in (report or {}).items() if k in ("models", "recovery_model", "latency_model")}
        text += (f"Profile: `{p['command']}` on the bench's own stack and job (`{p['job']}`, live input "
                 f"{p['live_rate']:,} ev/s), {p['wall_s'] / 60:.1f} min. Live job's p99 in the minute before: "
                 f"{p['live_p99_before_s']} s; while the copies ran: "
                 + (f"{p['live_p99_during_s']} s" if p["live_during_profile"] else
                    "not measured (its input was paused once recorded: no room on two cores for copies beside a "
                    "busy job)")
                 + f". Models: {json.dumps(models)[:1500]}\n\n")
    points = [GridPoint(**g) for g in context.get("grid", [])]
    if points:
        rates = sorted({g.rate for g in points})
        lat, rec = context.get("latency_target_s"), context.get("recovery_target_s")
        text += ("Predicted by the profile's models (recovery s / p99 s) at the scenario's lowest, middle and "
                 "highest rate" + (f"; `*`: meets both targets (p99 <= {lat:g} s, recovery <= {rec:g} s)"
                                    if lat and rec else "") + ":\n\n")
        text += "| interval | " + " | ".join(f"{r:,.0f} ev/s" for r in rates) + " |\n|---|" + "---|" * len(rates) + "\n"
        for i in sorted({g.interval_s for g in points}):
            cells = []
            for r in rates:
                g = next(x for x in points if x.interval_s == i and x.rate == r)
                star = "*" if lat and rec and g.meets(lat, rec) else ""
                cells.append(f"{g.recovery_s} / {g.p99_s}{star}")
            text += f"| {i:g} s | " + " | ".join(cells) + " |\n"
        if context.get("targets_why"):
            text += f"\nTargets: {context['targets_why']}\n"
        if context.get("best_static_s"):
            text += f"Best single static interval by the profile: {context['best_static_s']:g} s.\n"
    return text


def plot_frontier(path: Path, figures: list[ArmFigures]) -> None:
    """QoS-violation seconds against checkpoint time: the static arms' frontier, every other arm beside it."""
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    statics = sorted((f for f in figures if is_static(f.arm) and not f.error), key=lambda f: f.checkpoint_share)
    if statics:
        ax.plot([100 * f.checkpoint_share for f in statics], [qos_s(f) for f in statics], "o-", color="tab:grey",
                label="static intervals")
    for f in figures:
        if f.error:
            continue
        ax.scatter([100 * f.checkpoint_share], [qos_s(f)], s=30,
                   color="tab:grey" if is_static(f.arm) else "tab:purple" if f.arm in CHRONOS_ARMS else "tab:orange")
        ax.annotate(f.arm, (100 * f.checkpoint_share, qos_s(f)), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("time checkpointing (%)")
    ax.set_ylabel("QoS-violation seconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_summary(path: Path, figures: list[ArmFigures]) -> None:
    fig, axes = plt.subplots(1, 4, figsize=(17, 4), dpi=110)
    names = [f.arm for f in figures]
    axes[0].bar(names, [f.latency_violation_s for f in figures], color="tab:blue", label="latency")
    axes[0].bar(names, [f.recovery_violation_s for f in figures], bottom=[f.latency_violation_s for f in figures],
                color="tab:red", label="recovery")
    axes[0].set_title("QoS-violation seconds")
    axes[0].legend(fontsize=8)
    axes[1].bar(names, [f.max_recovery_s or 0 for f in figures], color="tab:red", alpha=0.4, label="max")
    axes[1].bar(names, [f.mean_recovery_s or 0 for f in figures], color="tab:red", label="mean")
    axes[1].set_title("recovery time from the kill (s)")
    axes[1].legend(fontsize=8)
    axes[2].bar(names, [100 * f.checkpoint_share for f in figures], color="tab:grey")
    axes[2].set_title("time checkpointing (%)")
    axes[3].bar(names, [f.mean_throughput or 0 for f in figures], color="tab:green", alpha=0.5, label="read")
    axes[3].bar(names, [f.mean_input_rate or 0 for f in figures], color="tab:green", label="arrived")
    axes[3].set_title("mean throughput (events/s): read vs arrived")
    axes[3].legend(fontsize=8)
    for ax in axes:
        ax.tick_params(axis="x", rotation=30, labelsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_timelines(path: Path, figures: list[ArmFigures], sc: Scenario) -> None:
    """Per arm: the interval in force and how far the output was behind, over the input rate and the kills."""
    fig, axes = plt.subplots(len(figures), 1, figsize=(11, 2.2 * len(figures)), dpi=100, sharex=True, squeeze=False)
    for ax, f in zip(axes[:, 0], figures, strict=True):
        t = [s[0] for s in f.series]
        ax.step(t, [s[1] for s in f.series], where="post", color="tab:purple", label="interval (s)")
        ax.plot(t, [s[4] if s[4] is not None else float("nan") for s in f.series], color="tab:blue", lw=0.8,
                label="output behind (s)")
        ax.axhline(sc.latency_target_s, color="tab:blue", ls=":", lw=0.8)
        rate = ax.twinx()
        rate.plot(t, [s[2] if s[2] is not None else float("nan") for s in f.series], color="tab:grey", lw=0.6)
        rate.set_ylabel("ev/s", fontsize=7)
        ax.set_ylabel(f.arm, fontsize=8)
        ax.set_ylim(0, 130)
        for at in sc.failures_s:
            ax.axvline(at, color="tab:red", lw=1)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("seconds into the arm (red: TaskManager killed; dotted: latency target)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def default_arms(best_s: float) -> list[str]:
    """The issue's arms: three static intervals (the profile's best, a managed service's 60 s, and 10 s or the
    docs-typical 30 s), Young/Daly, Khaos-style, chronos restarting, paced, paced with its recovery settings, and
    the best static interval with those settings."""
    best = max(1, round(best_s))
    statics = list(dict.fromkeys([best, 60, 10 if best >= 20 else DOCS_TYPICAL_S, DOCS_TYPICAL_S]))[:3]
    return ([f"static-{s}" for s in statics] + ["young-daly", "khaos", "chronos-restart", "chronos",
                                                  "chronos-settings", f"static-{best}-settings"])


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    # Started in the background (`cmd &` from a script), SIGINT arrives ignored and SIGTERM would end the bench
    # without its `finally`: both become an interrupt, so every arm's stack is taken down on the way out.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter arms, one failure: a smoke test")
    parser.add_argument("--arms", default="", help="comma-separated arms (default: the issue's nine, the static ones "
                        "from the profile); any static-N or static-N-settings, or " + ", ".join(ARMS))
    parser.add_argument("--out", type=Path, help="default: bench/results/side_by_side_2/SCENARIO")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--from-json", type=Path, action="append", help="redo the table and plots from a saved "
                        "arms.json, run nothing; given more than once, the arms of several invocations of one scenario "
                        "(same trace, kills, targets and profile) as one table")
    parser.add_argument("--targets-why", help="busy: why the targets given on the command line are what they are "
                        "(written into the report)")
    parser.add_argument("--scenario", choices=tuple(BENCH_JOBS), default="idle",
                        help="idle: the first round's (the demo job at a few %% of its capacity); busy: 40-85 %% of it; "
                             "own: the shop job (jobs/shop_payments.yaml) under the idle scenario's trace")
    parser.add_argument("--capacity", type=float, help="busy: the job's capacity (ev/s) as bench/capacity.py measured it")
    parser.add_argument("--arm-s", type=float, default=900.0, help="busy: a full arm's seconds (four kills in it)")
    parser.add_argument("--latency-target", type=float, help="busy: p99 target (s); default: from the profile")
    parser.add_argument("--recovery-target", type=float, help="busy: recovery target (s); default: from the profile")
    parser.add_argument("--profile-db", type=Path, help="the bench's profile of this scenario's job, made before "
                        "(default: run `chronos profile run` first, on a fresh stack)")
    parser.add_argument("--profile-budget", default="14m")
    parser.add_argument("--profile-only", action="store_true", help="profile, show the grid and targets, stop")
    args = parser.parse_args()
    out = args.out or RESULTS / "side_by_side_2" / args.scenario
    if args.from_json:
        runs = []
        for path in args.from_json:
            try:
                runs.append(SavedRun.parse(json.loads(path.read_text())))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                parser.error(f"{path} is not an arms.json this bench wrote: {type(exc).__name__}: {exc}")
        try:
            run = merge_runs(runs)
        except ValueError as exc:
            parser.error(f"cannot report these runs as one: {exc}")
        context = {**run.context, **({"targets_why": args.targets_why} if args.targets_why else {})}
        write_outputs(out, list(run.records), run.scenario, run.quick, run.laps, context)
        console.print((out / "results.md").read_text())
        return 0
    arms = [a for a in args.arms.split(",") if a]
    unknown = [a for a in arms if arm_spec(a) is None]
    if unknown:
        parser.error(f"unknown arms {unknown}")
    job = BENCH_JOBS[args.scenario]
    if args.scenario == "busy":
        if not args.capacity:
            parser.error("--scenario busy needs --capacity (bench/capacity.py)")
        sc = busy_scenario(args.capacity, args.seed, args.quick, args.latency_target or 1.0,
                           args.recovery_target or 60.0, args.arm_s)
    else:  # idle, and the own job's under the same trace
        sc = replace(scenario(args.quick, args.seed), name=args.scenario)
    base = Path("/tmp") / f"chronos-side-by-side-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    if args.profile_db:
        if args.profile_db.resolve() != (out / "profile.db").resolve():
            shutil.copyfile(args.profile_db, out / "profile.db")
    else:
        profile_step(sc, job, base, out, args.profile_budget)
    points = profile_grid(out / "profile.db", sc)
    context: dict[str, Any] = {"job": " ".join(job.submit), "load": " ".join(job.load), "capacity": args.capacity,
                               "grid": [asdict(g) for g in points]}
    if args.scenario == "busy":
        suggested: Targets | None = suggest_targets(points)
        if not (args.latency_target and args.recovery_target) and suggested is None:
            console.print(profile_section(out, context))
            parser.error("the profile leaves no targets with room for an adaptive interval: give --latency-target "
                         "and --recovery-target")
        latency = args.latency_target or (suggested.latency_s if suggested else 0.0)
        recovery = args.recovery_target or (suggested.recovery_s if suggested else 0.0)
        sc = busy_scenario(args.capacity, args.seed, args.quick, latency, recovery, args.arm_s)
        context["targets_why"] = (suggested.why if suggested and (latency, recovery) == (suggested.latency_s,
                                                                                         suggested.recovery_s)
                                  else args.targets_why or "given on the command line")
    context.update(latency_target_s=sc.latency_target_s, recovery_target_s=sc.recovery_target_s)
    best = best_static(static_verdicts(points, sc.latency_target_s, sc.recovery_target_s))
    context["best_static_s"] = best
    console.print(f"scenario: {sc}")
    console.print(profile_section(out, context))
    if args.profile_only:
        (out / "profile_grid.json").write_text(json.dumps(context, indent=1))
        shutil.rmtree(base, ignore_errors=True)
        return 0
    records: list[ArmRecord] = []
    laps: dict[str, Any] = {}
    for name in arms or default_arms(best):
        spec = arm_spec(name)
        assert spec is not None
        record, laps[name] = run_arm(name, spec, sc, base, job, out / "profile.db")
        records.append(record)
        write_outputs(out, records, sc, args.quick, laps, context)
    shutil.rmtree(base, ignore_errors=True)
    console.print((out / "results.md").read_text())
    console.print(f"done in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
