"""A default profile on this machine, and the spread of one configuration profiled again.

    .venv/bin/python bench/profile_default.py [--repeats 3] [--skip-profile]
    .venv/bin/python bench/profile_default.py --explore-recovery --repeats 0

`--explore-recovery`: the default profile also explores the recovery settings `chronos recommend`
proposes (heartbeats, restart delay, a spare TaskManager) within the same 15-minute budget; its report's phases
(measured against the phase model fitted on the other runs) and the model families' held-out errors go to
bench/results/profile_explore.json.

1. A stack, the demo job under 2,000 events/s (`chronos load run --background`), then
   `chronos profile run` with its defaults (workload recorded for 30 s, 2 at a time then, `--parallel auto` since,
   15 min budget):
   wall time, runs, faults, and each run's figures.
2. One configuration (10 s interval, load x1, one worst-case fault) profiled `--repeats` times in a row:
   min / median / max of recovery time, p99, throughput and checkpoint duration. Is one run per point
   enough?
Writes bench/results/profile.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from chronos.profiler.records import ProfileRun, RunConfig
from chronos.profiler.report import report_rows
from chronos.profiler.run import RunPlan, execute_run
from chronos.profiler.store import ProfileStore
from chronos.rates import TraceRate
from chronos.stack.job_records import JobRecordStore
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.profiling_clusters import LocalClusterPool

CACHE = default_cache_dir()  # as root /var/cache/chronos, readable by the service user
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)


def chronos(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def spread(values: Sequence[float | None]) -> list[float] | None:
    known = [v for v in values if v is not None]
    return [round(min(known), 1), round(statistics.median(known), 1), round(max(known), 1)] if known else None


def default_profile(sd: Path, job_id: str, *extra: str) -> dict[str, Any]:
    start = time.monotonic()
    done = chronos("profile", "run", "--job", job_id, "--json", *extra, "--stack-dir", str(sd))
    wall = time.monotonic() - start
    if done.returncode != 0:
        return {"error": done.stderr[-2000:], "wall_s": round(wall)}
    outcome = json.loads(done.stdout)
    store = ProfileStore(sd / "profiles.db")
    rows = report_rows(store.runs(outcome["profile_id"]))
    report = chronos("profile", "report", "--profile", outcome["profile_id"], "--models", "--json", "--stack-dir",
                     str(sd))
    reported = json.loads(report.stdout) if report.returncode == 0 else {"error": report.stderr[-2000:]}
    return {"wall_s": round(wall), **outcome, "faults": sum(r.faults for r in rows),
            "runs": [asdict(r) for r in rows], "phases": reported.get("phases"), "models": reported.get("models"),
            "recovery_in_force": [dict(m.settings_in_force) for r in store.runs(outcome["profile_id"])
                                  for m in r.recoveries[:1]]}


def repeats(sd: Path, job_id: str, n: int, bootstrap: str) -> dict[str, Any]:
    record = JobRecordStore(sd / "jobs").get(job_id)
    assert record is not None
    plan = RunPlan("bench-repeat", record.spec, TraceRate((0.0,), (2000.0,)))
    pool = LocalClusterPool(sd / "profiling" / "bench-repeat", CACHE, bootstrap, slots=record.spec.parallelism or 1)
    runs: list[ProfileRun] = []
    for i in range(n):
        def phase(text: str, i: int = i) -> None:
            console.print(f"repeat {i + 1}: {text}")

        run = execute_run(plan, i, RunConfig(10_000, 1.0), pool, stop=threading.Event(), on_phase=phase)
        console.print(f"repeat {i + 1}: {run.status} {run.error}")
        runs.append(run)
    rows = report_rows(runs)
    return {
        "config": "10 s interval, 2,000 events/s, 1 worst-case fault", "runs": len(rows),
        "completed": sum(r.status == "completed" for r in rows),
        "recovery_s": spread([r.recovery_s for r in rows]), "p99_ms": spread([r.p99_ms for r in rows]),
        "throughput": spread([r.throughput for r in rows]), "checkpoint_ms": spread([r.checkpoint_ms for r in rows]),
        "run_wall_s": spread([r.duration_s for r in rows]),
    }


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--explore-recovery", action="store_true")
    parser.add_argument("--keep-store", type=Path, help="copy the profile store here (every run's samples) before the "
                        "stack is purged")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": "2 cores, 24 GiB"}
    with tempfile.TemporaryDirectory() as tmp:
        sd = Path(tmp)
        state, _ = up(StackOptions(sd, CACHE))
        try:
            submitted = chronos("job", "submit", "demo", "--interval", "5s", "--json", "--stack-dir", str(sd))
            job_id = json.loads(submitted.stdout)["job_id"]
            chronos("load", "run", "--rate", "2000", "--background", "--stack-dir", str(sd))
            time.sleep(20)
            if not args.skip_profile:
                results["default_profile"] = default_profile(
                    sd, job_id, *(("--explore-recovery",) if args.explore_recovery else ()))
                console.print(json.dumps({k: v for k, v in results["default_profile"].items() if k != "runs"}))
            if args.repeats:
                results["repeats"] = repeats(sd, job_id, args.repeats, state.bootstrap)
                console.print(json.dumps(results["repeats"]))
        finally:
            if args.keep_store is not None and (sd / "profiles.db").exists():
                shutil.copyfile(sd / "profiles.db", args.keep_store)
            down(sd, purge=True)
    RESULTS.mkdir(exist_ok=True)
    written = RESULTS / ("profile_explore.json" if args.explore_recovery else "profile.json")
    written.write_text(json.dumps(results, indent=1) + "\n")
    console.print(f"wrote {written}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: stop the stack
    main(sys.argv[1:])
