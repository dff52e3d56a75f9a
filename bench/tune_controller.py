"""The tuner's own figures: model error on held-out recoveries, the retune
downtime distribution, and the controller's CPU and memory during a 10-minute tune.

    .venv/bin/python bench/tune_controller.py [--retunes 8] [--tune-minutes 10] [--skip-stack]

1. models: the 30 measured recoveries of bench/results/recovery_sweep.json (real TaskManager kills,
   intervals 2-30 s, 2,000 and 6,000 ev/s), fitted the way the tuner fits them: held-out MAPE per
   family (5-fold), and leave-one-interval-out MAPE (predicting an interval never profiled), next to
   Khaos's model (OLS recovery ~ throughput + interval) scored the same way.
2. retunes: on a fresh local stack, the demo job under 2,000 ev/s retuned `--retunes` times between
   10 s and 20 s through the tuner's own Retuner (journaled, stop-with-savepoint to all tasks RUNNING).
3. controller: `chronos tune` for `--tune-minutes` on that job (the sweep as its profile, a sine load
   1,000-5,000 ev/s), its CPU (utime + stime) and RSS read from /proc every 5 s.
Writes bench/results/tune_controller.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from rich.console import Console
from sklearn.linear_model import LinearRegression

from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestJobControl
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.optimizer.models import Observation, fit_best
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import ProfileStore
from chronos.stack.job_records import JobRecordStore
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob

CACHE = default_cache_dir()  # as root /var/cache/chronos, readable by the service user
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)


def sweep_rows() -> list[dict[str, Any]]:
    data = json.loads((RESULTS / "recovery_sweep.json").read_text())
    return [r for r in data["rows"] if r["measurement"]["recovery_s"] is not None]


def mape(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean(np.abs(predicted - truth) / truth))


def models_section() -> dict[str, Any]:
    rows = sweep_rows()
    obs = [Observation(r["interval_s"], r["load"], r["measurement"]["recovery_s"]) for r in rows]
    fitted = fit_best(obs, seed=0)
    y = np.array([o.value for o in obs])
    x_khaos = np.array([[o.rate, o.interval_s] for o in obs])
    loio: dict[str, list[float]] = {"chronos": [], "khaos-ols": [], "median": []}
    for interval in sorted({o.interval_s for o in obs}):
        train = [o for o in obs if o.interval_s != interval]
        test = np.array([o.interval_s == interval for o in obs])
        model = fit_best(train, seed=0)
        loio["chronos"].append(mape(y[test], np.array([model.predict(o.interval_s, o.rate).median
                                                        for o in obs if o.interval_s == interval])))
        ols = LinearRegression().fit(x_khaos[~test], y[~test])
        loio["khaos-ols"].append(mape(y[test], ols.predict(x_khaos[test])))
        loio["median"].append(mape(y[test], np.full(test.sum(), float(np.median(y[~test])))))
    return {
        "observations": len(obs), "family": fitted.report.family, "held_out_mape": fitted.report.held_out_mape,
        "mape_by_family": dict(fitted.report.mape_by_family),
        "leave_one_interval_out_mape": {k: round(float(np.mean(v)), 4) for k, v in loio.items()},
        "leave_one_interval_out_max": {k: round(float(np.max(v)), 4) for k, v in loio.items()},
    }


def forecast_section(step_s: float = 5.0, horizon_s: float = 300.0, seed: int = 1) -> dict[str, Any]:
    """Each forecaster alone, and the backtest's pick, against what came next (peak over the horizon),
    on the load generator's profiles sampled as the tuner samples (every 5 s, 3 % reading noise)."""
    import random

    from chronos.optimizer.forecast import FORECASTERS, forecast_rate
    from chronos.rates import ConstantRate, SineRate, StepRate

    rng = random.Random(seed)
    profiles = {"constant 3,000": ConstantRate(3000), "step 1,000 -> 5,000 at 30 min": StepRate(1000, 5000, 1800),
                "sine 3,000 +- 2,000 over 20 min": SineRate(3000, 2000, 1200),
                "sine 3,000 +- 2,000 over 1 h": SineRate(3000, 2000, 3600)}
    steps = round(horizon_s / step_s)
    results: dict[str, Any] = {}
    for name, profile in profiles.items():
        series = [profile.rate_at(i * step_s) * (1 + rng.gauss(0, 0.03)) for i in range(int(7200 / step_s))]
        errors: dict[str, list[float]] = {m: [] for m in [*FORECASTERS, "chosen"]}
        picks: dict[str, int] = {}
        for end in range(120, len(series) - steps, 12):  # a decision every minute, 10 min of history
            history, actual_peak = series[end - 120:end], max(series[end:end + steps])
            for method, forecaster in FORECASTERS.items():
                errors[method].append(abs(max(forecaster(history, steps)) - actual_peak) / actual_peak)
            chosen = forecast_rate(history, step_s, horizon_s)
            picks[chosen.method] = picks.get(chosen.method, 0) + 1
            errors["chosen"].append(abs(chosen.peak - actual_peak) / actual_peak)
        results[name] = {"peak_mape": {m: round(float(np.mean(e)), 4) for m, e in errors.items()}, "picks": picks}
    return results


def chronos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=True)


def write_sweep_profile(db: Path, job_name: str) -> None:
    store = ProfileStore(db)
    store.create_profile("recovery-sweep", job_name, 0, "{}")
    by_cell: dict[tuple[float, float], list[dict[str, Any]]] = {}
    for r in sweep_rows():
        by_cell.setdefault((r["interval_s"], r["load"]), []).append(r["measurement"])
    for n, ((interval, load), ms) in enumerate(sorted(by_cell.items())):
        recoveries = tuple(RecoveryMeasurement(**{**m, "fault": FaultRecord(**m["fault"])}) for m in ms)
        store.save_run(ProfileRun(f"sweep-{n}", "recovery-sweep", n, RunConfig(int(interval * 1000), 1.0), load,
                                  "completed", 0, 1, SteadyState(load, None, None, None, None, None, None), recoveries))
    store.close()


def proc_sample(pid: int) -> tuple[float, int]:
    """(CPU seconds used so far, RSS bytes) of a process and its threads."""
    proc = psutil.Process(pid)
    times = proc.cpu_times()
    return float(times.user + times.system), int(proc.memory_info().rss)


def tuner_footprint(proc: subprocess.Popen[str]) -> dict[str, float]:
    """CPU share of a core and RSS of a running `chronos tune`, sampled every 5 s until it exits (its first 15 s,
    interpreter start and imports, are not the steady cost)."""
    samples: list[tuple[float, float, int]] = []
    time.sleep(15)
    while proc.poll() is None:
        try:
            cpu, rss = proc_sample(proc.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        samples.append((time.monotonic(), cpu, rss))
        time.sleep(5)
    steady = samples[1:]
    return {"cpu_share_of_core": round((steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0]), 4),
            "rss_max_mb": round(max(s[2] for s in steady) / 2**20, 1),
            "rss_median_mb": round(statistics.median(s[2] for s in steady) / 2**20, 1)}


@contextmanager
def bench_stack(prefix: str) -> Iterator[tuple[Any, Path]]:
    """A fresh local stack (2 slots) for one bench, stopped and purged with whatever load it ran, its directory
    (profiles, job records) removed: a bench keeps what it measured in bench/results."""
    stack_dir = Path(tempfile.mkdtemp(prefix=prefix))
    state, _ = up(StackOptions(stack_dir, CACHE, slots=2))
    try:
        yield state, stack_dir
    finally:
        subprocess.run([sys.executable, "-m", "chronos.cli.main", "load", "stop", "--stack-dir", str(stack_dir)],
                       capture_output=True)
        down(stack_dir, purge=True)
        shutil.rmtree(stack_dir, ignore_errors=True)


def retunes_section(state: Any, sd: str, count: int) -> dict[str, Any]:
    submitted = json.loads(chronos("job", "submit", "demo", "--interval", "10s", "--parallelism", "1", "--json",
                                   "--stack-dir", sd).stdout)
    job_id = submitted["job_id"]
    chronos("load", "run", "--rate", "2000", "--background", "--stack-dir", sd)
    record = JobRecordStore(Path(sd) / "jobs").get(job_id)
    assert record is not None
    downtimes = []
    with FlinkRestClient(state.rest_url) as client, tempfile.TemporaryDirectory() as tmp:
        journal = TuneJournal(Path(tmp) / "journal.db")
        control = RestJobControl(client, RestSubmitter(client, find_distribution().python_jar), state.savepoint_dir)
        job = TunedJob(job_id, record.spec, record.settings)
        for i in range(count):
            time.sleep(20)
            target = 20_000 if job.settings.interval_ms == 10_000 else 10_000
            outcome = Retuner(control, journal).retune(job, target, "bench")
            assert outcome.outcome == "verified", outcome
            downtimes.append(outcome.downtime_s or 0.0)
            job = outcome.job
            console.print(f"retune {i + 1}/{count}: {outcome.downtime_s:.2f} s")
        journal.close()
    JobRecordStore(Path(sd) / "jobs").save(type(record)(job.job_id, job.spec, job.settings))
    chronos("load", "stop", "--stack-dir", sd)
    return {"job_id": job.job_id, "downtimes_s": [round(d, 3) for d in downtimes],
            "min": min(downtimes), "median": statistics.median(downtimes),
            "p90": float(np.percentile(downtimes, 90)), "max": max(downtimes)}


def controller_section(sd: str, job_id: str, job_name: str, minutes: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chronos.db"
        write_sweep_profile(db, job_name)
        chronos("load", "run", "--rate", "3000", "--profile", "sine", "--amplitude", "2000", "--period", "240",
                "--background", "--stack-dir", sd)
        proc = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "tune", "--json", "--job", job_id,
                                 "--latency-p99", "60s", "--recovery", "45s", "--interval-min", "2s",
                                 "--interval-max", "30s", "--cooldown", "2min", "--duration", f"{minutes * 60:.0f}s",
                                 "--db", str(db), "--metrics-port", "0", "--stack-dir", sd],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        footprint = tuner_footprint(proc)
        out, err = proc.communicate(timeout=60)
        chronos("load", "stop", "--stack-dir", sd)
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"event"')]
    summary_start = out.find('{\n  "event": "summary"')
    summary = json.loads(out[summary_start:]) if summary_start >= 0 else {}
    return {"minutes": minutes, "exit_code": proc.returncode, **footprint,
            "decisions": sum(1 for e in events if e["event"] == "decision"),
            "retunes": [e.get("text") for e in events if e["event"] == "retune"], "summary": summary,
            "stderr_tail": err[-500:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retunes", type=int, default=8)
    parser.add_argument("--tune-minutes", type=float, default=10.0)
    parser.add_argument("--skip-stack", action="store_true", help="Only the model section.")
    args = parser.parse_args()
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.cpu_count()} cores",
                               "models": models_section()}
    console.print_json(data=results["models"])
    results["forecast"] = forecast_section()
    console.print_json(data=results["forecast"])
    if not args.skip_stack:
        with bench_stack("chronos-bench-tune-") as (state, stack_dir):
            results["retunes"] = retunes_section(state, str(stack_dir), args.retunes)
            console.print_json(data=results["retunes"])
            record = JobRecordStore(stack_dir / "jobs").get(results["retunes"]["job_id"])
            assert record is not None
            results["controller"] = controller_section(str(stack_dir), record.job_id, record.spec.name, args.tune_minutes)
            console.print_json(data=results["controller"])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tune_controller.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
