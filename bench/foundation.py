"""Benchmark of the foundation, on demand, never in the test suite.

    .venv/bin/python bench/foundation.py [startup resources throughput retune]   (default: all)

Measures on this machine: `stack up` time to ready; RSS of each JVM at idle and under 1k and 10k
events/s with checkpoint durations at each rate; the demo job's throughput limit; retune downtime
(stop-with-savepoint -> new job all RUNNING, and -> first output record of the new job) for the
REST (PythonDriver) path and the `flink run` CLI path. Writes bench/results/foundation.json.
"""

from __future__ import annotations

import json
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console
from rich.table import Table

from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestJobControl
from chronos.flink.prometheus_scrape import scrape, source_records_out
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import CliSubmitter, JobSubmitter, RestSubmitter
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.output import committed_consumer, committed_records
from chronos.jobs.parallel_load import LoadPlan, run_parallel_load
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings, JobSpec
from chronos.rates import ConstantRate
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.state import StackState
from chronos.tune.journal import TuneJournal
from chronos.tune.retune import Retuner, TunedJob

CACHE = default_cache_dir()  # as root /var/cache/chronos, readable by the service user
console = Console(stderr=True)


@dataclass(frozen=True)
class Restart:
    savepoint_s: float  # stop request -> savepoint complete
    submitted_s: float  # stop request -> new job id returned
    running_s: float  # stop request -> every task of the new job RUNNING


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 1024 / 1024


def rss_all(state: StackState) -> dict[str, float]:
    return {name: round(rss_mb(record.pid), 0) for name, record in state.processes().items()}


class Load:
    """Background load at a fixed rate until stopped."""

    def __init__(self, state: StackState, topic: str, rate: float, workers: int = 2, count: int | None = None) -> None:
        self.stop = False
        plan = LoadPlan(state.bootstrap, topic, ConstantRate(rate), vehicles=2000, workers=workers,
                        duration_s=None if count else 3600, count=count, run_id=f"b{uuid.uuid4().hex[:6]}")
        self.result: Any = None
        self.thread = threading.Thread(target=self._run, args=(plan,))
        self.thread.start()

    def _run(self, plan: LoadPlan) -> None:
        self.result = run_parallel_load(plan, should_stop=lambda: self.stop)

    def halt(self) -> Any:
        self.stop = True
        self.thread.join(60)
        return self.result


def demo(state: StackState, name: str, parallelism: int = 2) -> tuple[DemoSettings, JobSpec]:
    s = uuid.uuid4().hex[:6]
    settings = DemoSettings(bootstrap=state.bootstrap, input_topic=f"in-{name}-{s}",
                            output_topic=f"out-{name}-{s}", group_id=f"g-{s}", name=f"bench-{name}-{s}",
                            parallelism=parallelism)
    ensure_topics(state.bootstrap, [settings.input_topic, settings.output_topic], partitions=2)
    return settings, demo_spec(settings)


def reporter_urls(state: StackState) -> list[str]:
    return state.prometheus_urls


# -- sections ------------------------------------------------------------------------------------
def bench_startup(runs: int = 3) -> dict[str, Any]:
    times = []
    for i in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            up(StackOptions(Path(tmp), CACHE))
            times.append(round(time.monotonic() - start, 1))
            t = time.monotonic()
            down(Path(tmp), purge=True)
            console.print(f"startup run {i + 1}: ready after {times[-1]} s, down took {time.monotonic() - t:.1f} s")
    return {"stack_up_to_ready_s": times, "median_s": statistics.median(times)}


def checkpoint_summary(client: FlinkRestClient, job_id: str, since_ms: int) -> dict[str, Any]:
    history = [h for h in client.checkpoints(job_id).history if h.status == "COMPLETED" and h.trigger_timestamp >= since_ms]
    if not history:
        return {"checkpoints": 0}
    durations = sorted(h.end_to_end_duration for h in history)
    return {"checkpoints": len(history), "duration_ms_median": statistics.median(durations), "duration_ms_max": durations[-1],
            "state_size_kib_last": round(history[0].state_size / 1024)}


def bench_resources(state: StackState, client: FlinkRestClient, phase_s: int = 60) -> dict[str, Any]:
    result: dict[str, Any] = {"idle_rss_mb": rss_all(state)}
    settings, spec = demo(state, "res")
    job = RestSubmitter(client, find_distribution().python_jar).submit(spec, CheckpointSettings(5000))
    client.wait_until_running(job)
    try:
        for rate in (1000, 10000):
            since = int(time.time() * 1000)
            load = Load(state, settings.input_topic, rate)
            peak: dict[str, float] = {}
            start = time.monotonic()
            while time.monotonic() - start < phase_s:
                time.sleep(5)
                for name, mb in rss_all(state).items():
                    peak[name] = max(peak.get(name, 0), mb)
            achieved = load.halt()
            result[f"{rate}_per_s"] = {
                "achieved_rate": round(achieved.achieved_rate) if achieved else None,
                "peak_rss_mb": peak, "checkpoints": checkpoint_summary(client, job, since),
            }
            console.print(f"{rate}/s: {result[f'{rate}_per_s']}")
    finally:
        client.cancel(job)
    return result


def bench_throughput(state: StackState, client: FlinkRestClient, events: int = 2_000_000) -> dict[str, Any]:
    """Preload a topic, then let the job drain it: the drain rate is the job's throughput limit."""
    settings, spec = demo(state, "tp")
    console.print(f"preloading {events:,} events ...")
    Load(state, settings.input_topic, rate=1e9, workers=2, count=events).thread.join()
    job = RestSubmitter(client, find_distribution().python_jar).submit(spec, CheckpointSettings(10000))
    client.wait_until_running(job)
    samples: list[tuple[float, float]] = []
    try:
        while len(samples) < 600:
            time.sleep(1)
            samples.append((time.monotonic(), source_records_out(scrape(reporter_urls(state)), settings.name)))
            if samples[-1][1] >= events:
                break
    finally:
        client.cancel(job)
    inner = [(t, n) for t, n in samples if 0.1 * events <= n <= 0.9 * events]
    rate = (inner[-1][1] - inner[0][1]) / (inner[-1][0] - inner[0][0]) if len(inner) >= 2 else None
    return {"events": events, "consumed": samples[-1][1] if samples else 0,
            "events_per_s_10_to_90_pct": round(rate) if rate else None,
            "drain_s": round(samples[-1][0] - samples[0][0], 1) if samples else None,
            "parallelism": settings.parallelism}


def bench_retune(state: StackState, client: FlinkRestClient, path: str, runs: int) -> dict[str, Any]:
    settings, spec = demo(state, f"rt-{path}")
    dist = find_distribution()
    submitter: JobSubmitter
    if path == "rest":
        submitter = RestSubmitter(client, dist.python_jar)
    else:
        home = Path(state.stack_dir) / "flink"
        submitter = CliSubmitter(dist, state.rest_url, home / "conf", home / "log", home / "lib")
    job = RestSubmitter(client, dist.python_jar).submit(spec, CheckpointSettings(2000))
    client.wait_until_running(job)
    arrivals: list[float] = []
    done = threading.Event()

    def watch() -> None:
        consumer = committed_consumer(state.bootstrap, settings.output_topic, from_beginning=False)
        for batch in committed_records(consumer, poll_ms=50):
            if batch:
                arrivals.append(time.time())
            if done.is_set():
                break
        consumer.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    load = Load(state, settings.input_topic, 2000, workers=1)
    runs_out = []
    try:
        time.sleep(15)
        journal = TuneJournal(Path(state.stack_dir) / f"foundation-{path}.db")
        retuner = Retuner(RestJobControl(client, submitter, state.savepoint_dir), journal)
        tuned = TunedJob(job, spec, CheckpointSettings(2000))
        for i in range(runs):
            interval = 3000 if i % 2 == 0 else 2000
            t0 = time.time()
            outcome = retuner.retune(tuned, interval, "bench")
            tuned = outcome.job
            r = Restart(outcome.savepoint_s or 0.0, outcome.submitted_s or 0.0, outcome.downtime_s or 0.0)
            submitted_wall = t0 + r.submitted_s
            deadline = time.time() + 30
            while time.time() < deadline and not [a for a in arrivals if a > submitted_wall]:
                time.sleep(0.05)
            first = min((a for a in arrivals if a > submitted_wall), default=None)
            row = {**asdict(r), "interval_ms": interval, "first_output_s": round(first - t0, 2) if first else None}
            console.print(f"{path} retune {i + 1}: savepoint {r.savepoint_s:.2f} s, submitted {r.submitted_s:.2f} s, "
                          f"RUNNING {r.running_s:.2f} s, first output {row['first_output_s']} s")
            runs_out.append(row)
            job = tuned.job_id
            time.sleep(8)
    finally:
        load.halt()
        done.set()
        watcher.join(10)
        client.cancel(job)
    running = [r["running_s"] for r in runs_out]
    firsts = [r["first_output_s"] for r in runs_out if r["first_output_s"] is not None]
    return {"runs": runs_out, "running_s_median": round(statistics.median(running), 2),
            "first_output_s_median": round(statistics.median(firsts), 2) if firsts else None}


def main(sections: list[str]) -> None:
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": "2 cores, 24 GiB"}
    if "startup" in sections:
        results["startup"] = bench_startup()
    with tempfile.TemporaryDirectory() as tmp:
        state, _ = up(StackOptions(Path(tmp), CACHE))
        try:
            with FlinkRestClient(state.rest_url) as client:
                if "resources" in sections:
                    results["resources"] = bench_resources(state, client)
                if "throughput" in sections:
                    results["throughput"] = bench_throughput(state, client)
                if "retune" in sections:
                    results["retune_rest"] = bench_retune(state, client, "rest", runs=5)
                    results["retune_cli"] = bench_retune(state, client, "cli", runs=3)
        finally:
            down(Path(tmp), purge=True)
    out = Path(__file__).parent / "results" / "foundation.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous.update(results)
    out.write_text(json.dumps(previous, indent=2) + "\n")
    table = Table("figure", "value")
    for key, value in results.items():
        table.add_row(key, json.dumps(value)[:300])
    Console().print(table)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: stop the stack
    main(sys.argv[1:] or ["startup", "resources", "throughput", "retune"])
