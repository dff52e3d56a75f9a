"""Retuning by pacing: what a cadence change costs and how well the cadence is held.

    .venv/bin/python bench/pacing.py [--changes 12] [--tune-minutes 5] [--load 2000]

On a fresh local stack (2 slots), the demo job (parallelism 1) configured at 120 s under `--load` ev/s:
1. changes: the tuner's own Pacer, in process, switched between 5 s and 10 s `--changes` times, one every 20 s.
   Decision-to-effect time (pace() to the first checkpoint at the new cadence completed, median and p90),
   downtime per change (the job polled every 0.2 s: time not all RUNNING; same job, no restore), and the pacing
   error: |measured gap - cadence| between consecutive completed checkpoints at one cadence.
2. cost: that job paced at 5 s for 70 s, then a job configured at 5 s (periodic) for 70 s, same load: the
   completed checkpoints' duration, size and alignment from Flink's history, side by side.
3. controller: `chronos tune --realize paced` for `--tune-minutes` (the recovery sweep as its profile, a sine load
   1,000-5,000 ev/s): its CPU and RSS (the figures of bench/tune_controller.py), decisions, cadence changes, restarts.
Writes bench/results/pacing.json and prints it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from tune_controller import RESULTS, bench_stack, chronos, tuner_footprint, write_sweep_profile

from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.stack.job_records import JobRecordStore
from chronos.tune.journal import Cadence
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.pacer import Pacer

console = Console(stderr=True)


class Seen:
    def __init__(self) -> None:
        self.in_force: dict[int, int] = {}  # cadence id -> in force ms
        self.errors: list[tuple[int, float]] = []  # (cadence ms, |gap - cadence| s)
        self.outcomes: list[str] = []
        self._cadence = 0

    def triggered(self, job_name: str, outcome: str) -> None:
        self.outcomes.append(outcome)

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        if error_s is not None:
            self.errors.append((self._cadence, error_s))

    def cadence(self, job_name: str, entry: Cadence) -> None:
        self._cadence = entry.to_ms
        if entry.in_force_ms is not None:
            self.in_force[entry.cadence_id] = entry.in_force_ms

    def message(self, text: str) -> None:
        console.print(f"pacer: {text}")


def submit(sd: str, interval: str) -> str:
    return str(json.loads(chronos("job", "submit", "demo", "--interval", interval, "--parallelism", "1", "--json",
                                  "--stack-dir", sd).stdout)["job_id"])


def stats(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "median": round(statistics.median(values), 3),
            "p90": round(float(np.percentile(values, 90)), 3), "max": round(max(values), 3)} if values else {"n": 0}


def watch_running(client: FlinkRestClient, job_id: str, stop: threading.Event, down_s: list[float]) -> None:
    last = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        try:
            running = client.job(job_id).all_running
        except Exception:  # noqa: BLE001 - an unanswered poll counts as down: the bench is strict
            running = False
        if not running:
            down_s.append(now - last)
        last = now
        stop.wait(0.2)


def checkpoint_figures(client: FlinkRestClient, job_id: str, since_ms: int) -> dict[str, Any]:
    history = [e for e in client.checkpoints(job_id).history if e.status == "COMPLETED" and e.trigger_timestamp >= since_ms]
    times = sorted(e.trigger_timestamp for e in history)
    return {"checkpoints": len(history),
            "gap_s": stats([(b - a) / 1000 for a, b in itertools.pairwise(times)]),
            "duration_ms": stats([float(e.end_to_end_duration) for e in history]),
            "state_size_kb": stats([e.state_size / 1024 for e in history]),
            "checkpointed_size_kb": stats([e.checkpointed_size / 1024 for e in history]),
            "alignment_buffered_kb": stats([e.alignment_buffered / 1024 for e in history]),
            "processed_data_kb": stats([e.processed_data / 1024 for e in history])}


def changes_and_cost(state: Any, sd: str, changes: int, load: int) -> dict[str, Any]:
    job_id = submit(sd, "120s")
    record = JobRecordStore(Path(sd) / "jobs").get(job_id)
    assert record is not None
    chronos("load", "run", "--rate", str(load), "--background", "--stack-dir", sd)
    client = FlinkRestClient(state.rest_url)
    seen = Seen()
    pacer = Pacer(RestCheckpointTrigger(client), MemoryJournal(), seen, record.spec.name)
    stop, down_s = threading.Event(), []
    threads = [threading.Thread(target=pacer.run, args=(stop,), daemon=True),
               threading.Thread(target=watch_running, args=(client, job_id, stop, down_s), daemon=True)]
    for t in threads:
        t.start()
    started = client.job(job_id).start_time
    time.sleep(20)
    effects = []
    for n in range(changes):
        cadence = 5000 if n % 2 == 0 else 10_000
        decided = int(time.time() * 1000)
        entry = pacer.pace(job_id, cadence, 120_000, "bench")
        deadline = time.monotonic() + 40
        while entry.cadence_id not in seen.in_force and time.monotonic() < deadline:
            time.sleep(0.1)
        effect = (seen.in_force[entry.cadence_id] - decided) / 1000 if entry.cadence_id in seen.in_force else None
        effects.append(effect)
        console.print(f"change {n + 1}/{changes} to {cadence / 1000:g} s: in force after {effect} s")
        time.sleep(max(0.0, 20 - (time.time() * 1000 - decided) / 1000))
    pacer.pace(job_id, 5000, 120_000, "bench: cost at 5 s")
    time.sleep(10)
    paced_since = int(time.time() * 1000)
    time.sleep(70)
    paced_cost = checkpoint_figures(client, job_id, paced_since)
    same_job = client.job(job_id).start_time == started and client.checkpoints(job_id).counts.restored == 0
    stop.set()
    pacer.wake()
    for t in threads:
        t.join(10)
    client.cancel(job_id)
    periodic_id = submit(sd, "5s")
    time.sleep(15)
    periodic_since = int(time.time() * 1000)
    time.sleep(70)
    periodic_cost = checkpoint_figures(client, periodic_id, periodic_since)
    client.cancel(periodic_id)
    chronos("load", "stop", "--stack-dir", sd)
    client.close()
    at5 = [e for c, e in seen.errors if c == 5000]
    at10 = [e for c, e in seen.errors if c == 10_000]
    return {"changes": changes, "decision_to_effect_s": stats([e for e in effects if e is not None]),
            "changes_never_in_force": sum(1 for e in effects if e is None),
            "downtime_s_total": round(sum(down_s), 3), "same_job_no_restore": same_job,
            "pacing_error_s_at_5s": stats(at5), "pacing_error_s_at_10s": stats(at10),
            "triggers": {o: seen.outcomes.count(o) for o in sorted(set(seen.outcomes))},
            "cost_paced_5s": paced_cost, "cost_periodic_5s": periodic_cost}


def controller(sd: str, minutes: float) -> dict[str, Any]:
    job_id = submit(sd, "30s")
    record = JobRecordStore(Path(sd) / "jobs").get(job_id)
    assert record is not None
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chronos.db"
        write_sweep_profile(db, record.spec.name)
        chronos("load", "run", "--rate", "3000", "--profile", "sine", "--amplitude", "2000", "--period", "240",
                "--background", "--stack-dir", sd)
        proc = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "tune", "--json", "--job", job_id,
                                 "--realize", "paced", "--latency-p99", "60s", "--recovery", "45s",
                                 "--interval-min", "2s", "--interval-max", "30s", "--cooldown", "2min",
                                 "--duration", f"{minutes * 60:.0f}s", "--db", str(db), "--metrics-port", "0",
                                 "--stack-dir", sd],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        footprint = tuner_footprint(proc)
        out, err = proc.communicate(timeout=60)
        chronos("load", "stop", "--stack-dir", sd)
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"event"')]
    return {"minutes": minutes, "exit_code": proc.returncode, **footprint,
            "decisions": sum(1 for e in events if e["event"] == "decision"),
            "paces": sum(1 for e in events if e["event"] == "decision" and e.get("action") == "pace"),
            "restarts": [e.get("text") for e in events if e["event"] == "retune"],
            "cadences": [e.get("text") for e in events if e["event"] == "cadence"],
            "stderr_tail": err[-500:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=12)
    parser.add_argument("--tune-minutes", type=float, default=5.0)
    parser.add_argument("--load", type=int, default=2000)
    args = parser.parse_args()
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.cpu_count()} cores"}
    with bench_stack("chronos-bench-pacing-") as (state, stack_dir):
        results["pacing"] = changes_and_cost(state, str(stack_dir), args.changes, args.load)
        console.print_json(data=results["pacing"])
        if args.tune_minutes > 0:
            results["controller"] = controller(str(stack_dir), args.tune_minutes)
            console.print_json(data=results["controller"])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pacing.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
