"""Side-by-side (issue 8): chronos against static intervals, Young/Daly and a Khaos-style optimizer, on
the same machine, the same workload trace and the same seeded failure schedule.

    .venv/bin/python bench/side_by_side.py [--quick] [--arms static-10,static-60,...] [--out DIR] [--seed 7]

Each arm starts from the same state: a fresh local stack (Kafka + Flink), the demo job submitted at the
arm's starting interval, the same profile in the tuner's database (the real measurements in
bench/results/recovery_sweep.json and bench/results/profile.json), `chronos tune` with the arm's strategy
for the whole arm, the load trace (a step, then a daily-like swing) from the load generator, and
TaskManagers SIGKILLed at the schedule's offsets. A counted input stream (its own run id) rides along for
the exactly-once check. Written to DIR: results.csv, results.md, arms.json, timeline.png, summary.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.console import Console

sys.path.insert(0, str(Path(__file__).parent))
from tune_controller import sweep_rows, write_sweep_profile

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import ExperimentInput
from chronos.optimizer.models import Observation, fit_best
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import ProfileStore
from chronos.stack.faults import KillTaskManager
from chronos.stack.local_stack import StackOptions, down, up

CACHE = Path.home() / ".cache" / "chronos"
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)

# Flink's docs set no default interval; the operator's and the docs' examples, and most production guides,
# checkpoint every 30 s to a few minutes. 30 s is the docs-typical value taken here (examples in the
# Flink Kubernetes Operator and "Checkpointing" pages), between the two static extremes.
DOCS_TYPICAL_S = 30
ARMS: dict[str, dict[str, Any]] = {
    "static-10": {"start_s": 10, "args": ["--strategy", "static", "--static-interval", "10s"]},
    "static-60": {"start_s": 60, "args": ["--strategy", "static", "--static-interval", "60s"]},
    f"static-{DOCS_TYPICAL_S}": {"start_s": DOCS_TYPICAL_S,
                                 "args": ["--strategy", "static", "--static-interval", f"{DOCS_TYPICAL_S}s"]},
    "young-daly": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "daly"]},
    # Khaos as published: OLS models fitted once, ratios of median predictions to the targets (no margin, no
    # calibration), a decision every 300 s, only changes of 5 s or more.
    "khaos": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "khaos"], "khaos": True,
              "policy": {"safety_margin": 0.0, "conservative": False, "calibrate_latency": False,
                         "min_change_rel": 0.0, "min_change_abs_s": 5.0}},
    "chronos": {"start_s": DOCS_TYPICAL_S, "args": ["--strategy", "chronos"]},
}


@dataclass(frozen=True)
class Scenario:
    arm_s: float
    base_rate: float
    step_at_s: float
    step_to: float
    swing: float
    period_s: float
    failures_s: tuple[float, ...]
    latency_target: str
    recovery_target: str
    decide_every: str
    khaos_every: str
    cooldown: str
    grace: str

    def rate(self, t: float) -> float:
        if t < self.step_at_s:
            return self.base_rate
        return max(200.0, self.step_to + self.swing * math.sin(2 * math.pi * (t - self.step_at_s) / self.period_s))


def scenario(quick: bool, seed: int) -> Scenario:
    rng = random.Random(seed)
    if quick:
        arm = 150.0
        failures: tuple[float, ...] = (round(rng.uniform(65, 80), 1),)
        return Scenario(arm, 1500, 30, 4500, 1500, 90, failures, "25s", "45s", "10s", "60s", "60s", "20s")
    arm = 1200.0
    slots = [(200 + i * 240, 200 + i * 240 + 120) for i in range(4)]  # one failure per 4-minute slot
    failures = tuple(round(rng.uniform(a, b), 1) for a, b in slots)
    return Scenario(arm, 1500, 150, 4000, 2000, 600, failures, "25s", "45s", "30s", "300s", "3min", "60s")


def write_profile(db: Path, job_name: str) -> None:
    """The real measurements of this machine as the job's profile: the recovery sweep (30 TaskManager
    kills, 2-30 s, 2k/6k ev/s) and the default profile's runs (steady p99 and checkpoint cost)."""
    write_sweep_profile(db, job_name)
    default = json.loads((RESULTS / "profile.json").read_text())["default_profile"]["runs"]
    store = ProfileStore(db)
    store.create_profile("default", job_name, 0, "{}")
    for n, r in enumerate(x for x in default if x["status"] == "completed"):
        steady = SteadyState(r["throughput"], r["p50_ms"], None, r["p99_ms"], r["checkpoint_ms"],
                             r["checkpoint_kib"] and r["checkpoint_kib"] * 1024, r["cpu_pct"])
        store.save_run(ProfileRun(f"default-{n}", "default", n, RunConfig(int(r["interval_s"] * 1000), 1.0),
                                  r["load_rate"], "completed", 0, 1, steady, ()))
    store.close()


def chronos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class ArmResult:
    arm: str
    latency_violation_s: float = 0.0
    recovery_violation_s: float = 0.0
    recoveries_s: list[float] = field(default_factory=list)
    unrecovered: int = 0
    over_target: int = 0
    over_target_s: float = 0.0
    retunes: int = 0
    retune_downtime_s: float = 0.0
    checkpoints: int = 0
    checkpoint_time_s: float = 0.0
    checkpoint_share: float = 0.0
    mean_rate: float = 0.0
    lost: int = 0
    duplicated: int = 0
    counted_events: int = 0
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (t, interval in force)
    failures: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


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


def run_arm(name: str, spec: dict[str, Any], sc: Scenario, base: Path, seed: int) -> ArmResult:
    result = ArmResult(name)
    sd = base / name
    shutil.rmtree(sd, ignore_errors=True)
    console.print(f"[bold]{name}[/]: fresh stack")
    state, _ = up(StackOptions(sd, CACHE))
    sdo = ["--stack-dir", str(sd)]
    client = FlinkRestClient(state.rest_url)
    counted: ExperimentInput | None = None
    tuner: subprocess.Popen[str] | None = None
    ledger = CheckpointLedger(client)
    try:
        submitted = chronos("job", "submit", "demo", "--interval", f"{spec['start_s']}s", "--parallelism", "1",
                            "--json", *sdo)
        if submitted.returncode:
            raise RuntimeError(submitted.stderr.strip())
        job_id = json.loads(submitted.stdout)["job_id"]
        ledger.jobs.append(job_id)
        db = sd / "chronos.db"
        records = json.loads((sd / "jobs" / f"{job_id}.json").read_text())
        write_profile(db, records["spec"]["name"])
        trace = sd / "trace.csv"
        trace.write_text("seconds,events_per_second\n" + "".join(
            f"{t},{sc.rate(t):.0f}\n" for t in range(0, int(sc.arm_s) + 30, 5)))
        counted = ExperimentInput(state.bootstrap, "vehicle-events", "vehicle-stats", rate=300, vehicles=50,
                                  run_id=uuid.uuid4().hex[:6])
        counted.start()
        load = chronos("load", "run", "--profile", "csv", "--trace", str(trace), "--workers", "2", "--background", *sdo)
        if load.returncode:
            raise RuntimeError(load.stderr.strip())
        every = sc.khaos_every if spec.get("khaos") else sc.decide_every
        config: list[str] = []
        if "policy" in spec:
            (sd / "policy.yaml").write_text(json.dumps(spec["policy"]))  # JSON is YAML
            config = ["--config", str(sd / "policy.yaml")]
        tuner = subprocess.Popen(
            [sys.executable, "-m", "chronos.cli.main", "tune", "--json", "--job", job_id, "--latency-p99",
             sc.latency_target, "--recovery", sc.recovery_target, *spec["args"], "--interval-min", "2s",
             "--interval-max", "120s", "--decide-every", every, "--collect-every", "2s", "--cooldown", sc.cooldown,
             "--startup-grace", sc.grace, "--horizon", "2min", "--duration", f"{sc.arm_s:.0f}s", "--db", str(db),
             "--metrics-port", "-1", *config, *sdo],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        ledger.start()
        events: list[dict[str, Any]] = []
        reader = threading.Thread(target=lambda: _read(tuner, events), daemon=True)
        reader.start()
        t0 = time.monotonic()
        pending = list(sc.failures_s)
        while tuner.poll() is None:
            elapsed = time.monotonic() - t0
            if pending and elapsed >= pending[0]:
                KillTaskManager(sd).inject()
                console.print(f"  {name}: TaskManager killed at {elapsed:.0f} s")
                pending.pop(0)
            for e in events:
                if e.get("event") == "retune" and e.get("new_job_id") and e["new_job_id"] not in ledger.jobs:
                    ledger.jobs.append(e["new_job_id"])
            time.sleep(0.5)
        reader.join(30)
        ledger.stop.set()
        chronos("load", "stop", *sdo)
        delivery = counted.finish(timeout_s=180)
        result.lost, result.duplicated = delivery.lost, delivery.duplicated
        result.counted_events = delivery.input_events
        _summarise(result, events, sc, t0)
        result.checkpoints = len(ledger.seen)
        result.checkpoint_time_s = round(sum(ledger.seen.values()), 2)
        result.checkpoint_share = result.checkpoint_time_s / sc.arm_s
    except Exception as exc:  # noqa: BLE001 - an arm that breaks is reported, the others still run
        result.error = f"{type(exc).__name__}: {exc}"[:300]
        console.print(f"[red]{name} failed: {result.error}[/]")
    finally:
        ledger.stop.set()
        if tuner is not None and tuner.poll() is None:
            tuner.kill()
        if counted is not None:
            counted.close()
        chronos("load", "stop", *sdo)
        client.close()
        down(sd)
    return result


def _read(proc: subprocess.Popen[str], events: list[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    buffer = ""
    for line in proc.stdout:
        buffer += line
        try:
            events.append(json.loads(buffer))
            buffer = ""
        except json.JSONDecodeError:
            continue


def _summarise(result: ArmResult, events: list[dict[str, Any]], sc: Scenario, t0: float) -> None:
    summary = next((e for e in events if e.get("event") == "summary"), {})
    result.latency_violation_s = float(summary.get("latency_violation_s", 0.0))
    result.recovery_violation_s = float(summary.get("recovery_violation_s", 0.0))
    target = float(sc.recovery_target.rstrip("s"))
    for e in events:
        if e.get("event") == "failure":
            result.failures.append({k: e.get(k) for k in ("failed_ms", "recovery_s", "interval_ms", "rate")})
            if e.get("recovery_s") is None:
                result.unrecovered += 1
            else:
                result.recoveries_s.append(float(e["recovery_s"]))
                if e["recovery_s"] > target:
                    result.over_target += 1
                    result.over_target_s += float(e["recovery_s"]) - target
        elif e.get("event") == "retune" and e.get("outcome") == "verified":
            result.retunes += 1
            result.retune_downtime_s += float(e.get("downtime_s") or 0.0)
        elif e.get("event") == "decision":
            result.intervals.append((len(result.intervals), float(e.get("interval_s") or 0)))
    rates = [float(e["observed_rate"]) for e in events if e.get("event") == "decision" and e.get("observed_rate")]
    result.mean_rate = statistics.fmean(rates) if rates else 0.0


def model_error(results: list[ArmResult]) -> dict[str, Any]:
    """chronos's recovery model (fitted on the profile only) against this run's failures, all arms."""
    obs = [Observation(r["interval_s"], r["load"], r["measurement"]["recovery_s"]) for r in sweep_rows()]
    model, khaos = fit_best(obs, seed=0), fit_best(obs, seed=0, families=("linear",))
    rows = []
    for res in results:
        for f in res.failures:
            if f["recovery_s"] and f["interval_ms"]:
                i, rate = f["interval_ms"] / 1000, f["rate"] or 0.0
                rows.append((f["recovery_s"], model.predict(i, rate).median, khaos.predict(i, rate).median))
    if not rows:
        return {"failures": 0}

    def mape(col: int) -> float:
        return round(statistics.fmean(abs(r[col] - r[0]) / r[0] for r in rows), 4)

    return {"failures": len(rows), "family": model.report.family, "chronos_mape": mape(1), "khaos_ols_mape": mape(2)}


def write_outputs(out: Path, results: list[ArmResult], sc: Scenario, errors: dict[str, Any], quick: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    baseline = next((r for r in results if r.arm == "static-60" and not r.error), None)
    rows = []
    for r in results:
        row = {
            "arm": r.arm, "latency_violation_s": round(r.latency_violation_s, 1),
            "recovery_violation_s": round(r.recovery_violation_s, 1),
            "recoveries_over_target": r.over_target, "over_target_s": round(r.over_target_s, 1),
            "mean_recovery_s": round(statistics.fmean(r.recoveries_s), 1) if r.recoveries_s else "",
            "max_recovery_s": round(max(r.recoveries_s), 1) if r.recoveries_s else "",
            "unrecovered": r.unrecovered, "mean_input_rate": round(r.mean_rate),
            "checkpoints": r.checkpoints, "checkpoint_share_pct": round(100 * r.checkpoint_share, 3),
            "overhead_vs_static60_pct": round(100 * (r.checkpoint_share - baseline.checkpoint_share), 3)
            if baseline else "",
            "retunes": r.retunes, "retune_downtime_s": round(r.retune_downtime_s, 2),
            "lost": r.lost, "duplicated": r.duplicated, "counted_events": r.counted_events, "error": r.error,
        }
        rows.append(row)
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    header = "| " + " | ".join(rows[0]) + " |\n|" + "---|" * len(rows[0]) + "\n"
    body = "".join("| " + " | ".join(str(v) for v in row.values()) + " |\n" for row in rows)
    (out / "results.md").write_text(
        f"# Side by side ({'quick' if quick else 'full'}, {time.strftime('%Y-%m-%d %H:%M')})\n\n"
        f"Scenario: {json.dumps(asdict(sc))}\n\n{header}{body}\n"
        f"Recovery model on this run's failures (held out from the profile): {json.dumps(errors)}\n")
    (out / "arms.json").write_text(json.dumps({"scenario": asdict(sc), "arms": [asdict(r) for r in results],
                                               "model_error": errors}, indent=2))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), dpi=110)
    names = [r.arm for r in results]
    axes[0].bar(names, [r.latency_violation_s for r in results], color="tab:blue")
    axes[0].set_title("latency QoS-violation seconds")
    axes[1].bar(names, [r.over_target_s for r in results], color="tab:red")
    axes[1].set_title("recovery seconds beyond target")
    axes[2].bar(names, [100 * r.checkpoint_share for r in results], color="tab:grey")
    axes[2].set_title("time checkpointing (%)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30, labelsize=8)
    fig.tight_layout()
    fig.savefig(out / "summary.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(10, 4), dpi=110)
    for r in results:
        if r.intervals:
            ax.step([i for i, _ in r.intervals], [v for _, v in r.intervals], where="post", label=r.arm)
    ax.set_xlabel("decision #")
    ax.set_ylabel("interval in force (s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "timeline.png")
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one failure, 2.5-minute arms (~22 min for six arms)")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of " + ", ".join(ARMS))
    parser.add_argument("--out", type=Path, default=RESULTS / "side_by_side")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arms {unknown}")
    sc = scenario(args.quick, args.seed)
    console.print(f"scenario: {sc}")
    base = Path("/tmp") / f"chronos-side-by-side-{uuid.uuid4().hex[:6]}"
    results = []
    started = time.monotonic()
    for name in arms:
        results.append(run_arm(name, ARMS[name], sc, base, args.seed))
        write_outputs(args.out, results, sc, {}, args.quick)
    errors = model_error(results)
    write_outputs(args.out, results, sc, errors, args.quick)
    shutil.rmtree(base, ignore_errors=True)
    console.print((args.out / "results.md").read_text())
    console.print(f"done in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
