"""A job's capacity on this machine, as the rate it drains a backlog at (the busy side by side runs the
job at 40-85 % of it, so it is measured first, on the bench's own stack and job).

    .venv/bin/python bench/capacity.py [--python-udf] [--parallelism 1] [--state-backend rocksdb]
                                         [--backlog 200000] [--rate 20000]

A fresh local stack; `--backlog` records produced into a fresh topic with no job reading it (the load generator at
`--rate`, as fast as it goes); then the demo job submitted with a fresh consumer group (it starts at the earliest
offset) and sampled every 0.5 s until the backlog is gone. Capacity: the upper decile of its throughput while
lag remained (the profiler's and chaos's own measure, `chronos.chaos.catch_up`), and the plain mean (records over
the drain's seconds, start-up included) beside it. `--beside R` keeps a live input of R ev/s arriving meanwhile:
on two cores the generator competes with the job, so the capacity a live load leaves is the one that counts.
`mean_processed_ev_s` is then the drain plus that input. Writes bench/results/capacity.json (one per variant).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from chronos.chaos.catch_up import explain_catch_up
from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings, SignalSample
from chronos.signals.live import LiveSignals
from chronos.stack.helpers import start_helper, stop_helper
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir

CACHE = default_cache_dir()
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)


def produce(stack_dir: str, topic: str, count: int, rate: float, vehicles: int) -> float:
    """`count` records into `topic` at up to `rate`; the rate reached."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "chronos.cli.main", "load", "run", "--rate", str(rate), "--count",
                           str(count), "--workers", "2", "--vehicles", str(vehicles), "--topic", topic,
                           "--no-close-windows", "--stack-dir", stack_dir],
                          capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"load run: {done.stderr.strip()[-300:]}")
    return count / (time.monotonic() - started)


def drain(signals: LiveSignals, backlog: int, timeout_s: float) -> list[SignalSample]:
    """Samples from the submission until the lag is under 1 % of the backlog (or the timeout)."""
    samples: list[SignalSample] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        samples.append(signals.sample())
        lag = samples[-1].lag
        if lag is not None and lag < 0.01 * backlog and any(s.lag and s.lag > 0.5 * backlog for s in samples):
            break
        time.sleep(0.5)
    return samples


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        state, _ = up(StackOptions(Path(tmp), CACHE))
        try:
            suffix = uuid.uuid4().hex[:6]
            settings = DemoSettings(bootstrap=state.bootstrap, input_topic=f"in-{suffix}", output_topic=f"out-{suffix}",
                                    group_id=f"g-{suffix}", name=f"capacity-{suffix}", parallelism=args.parallelism,
                                    python_udf=args.python_udf)
            ensure_topics(state.bootstrap, [settings.input_topic, settings.output_topic], partitions=2)
            produced_rate = produce(state.stack_dir, settings.input_topic, args.backlog, args.rate, args.vehicles)
            console.print(f"backlog of {args.backlog:,} records produced at {produced_rate:,.0f} ev/s")
            if args.beside:  # the generator keeps running beside the drain, as it does under a live load
                start_helper(state.stack_dir_path, "capacity-load", [
                    "load", "run", "--rate", str(args.beside), "--workers", "2", "--vehicles", str(args.vehicles),
                    "--topic", settings.input_topic,
                    "--duration", str(args.timeout), "--stack-dir", state.stack_dir])
            with FlinkRestClient(state.rest_url) as client:
                job = RestSubmitter(client, find_distribution().python_jar).submit(
                    demo_spec(settings), CheckpointSettings(int(args.interval * 1000), args.state_backend, args.incremental))
                signals = LiveSignals(client, job, settings.name, state.bootstrap, settings.input_topic,
                                      settings.output_topic, state.prometheus_urls)
                try:
                    samples = drain(signals, args.backlog, args.timeout)
                finally:
                    signals.close()
        finally:
            stop_helper(state.stack_dir_path, "capacity-load")
            down(Path(tmp), purge=True)
    running = next((s.at_ms for s in samples if s.throughput), None)
    emptied = next((s.at_ms for s in samples if running and s.at_ms > running and s.lag is not None
                    and s.lag < 0.01 * args.backlog), None)
    catch_up = explain_catch_up(samples, running, emptied)
    # What was drained: the lag when the job started reading (the backlog plus what arrived beside it meanwhile).
    peak = max((s.lag for s in samples if s.lag is not None and running and s.at_ms >= running), default=None)
    mean = peak / ((emptied - running) / 1000) if peak and running and emptied and emptied > running else None
    rates = [s.throughput for s in samples if s.throughput]
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": "2 cores, 24 GiB",
            "job": "demo" + (" --python-udf" if args.python_udf else ""), "parallelism": args.parallelism,
            "state_backend": args.state_backend + (" incremental" if args.incremental else ""),
            "vehicles": args.vehicles, "input_beside_ev_s": args.beside,
            "interval_s": args.interval, "backlog": args.backlog, "drained_records": peak, "produced_ev_s": round(produced_rate),
            "capacity_ev_s": None if catch_up.capacity is None else round(catch_up.capacity),
            "mean_drain_ev_s": None if mean is None else round(mean),
            "mean_processed_ev_s": None if mean is None else round(mean + args.beside),
            "median_throughput_ev_s": round(statistics.median(rates)) if rates else None,
            "drained": emptied is not None,
            "samples": [[s.at_ms, s.throughput, s.lag] for s in samples]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python-udf", action="store_true", help="the demo job averages speeds in a Python UDF")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--state-backend", choices=("hashmap", "rocksdb"), default="hashmap")
    parser.add_argument("--incremental", action="store_true", help="incremental checkpoints (rocksdb)")
    parser.add_argument("--vehicles", type=int, default=1000, help="the fleet (keys); more keys, more state and output")
    parser.add_argument("--interval", type=float, default=10.0, help="checkpoint interval while draining (s)")
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=20_000, help="the load generator's rate for the backlog")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--beside", type=float, default=0.0,
                        help="a live input rate kept up while the backlog drains (the generator competes for the "
                             "cores as under a live load); the drain is then capacity minus it")
    args = parser.parse_args(argv)
    entry = measure(args)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "capacity.json"
    stored = json.loads(path.read_text()) if path.exists() else []
    variant = ("job", "parallelism", "state_backend", "vehicles", "input_beside_ev_s")
    stored = [e for e in stored if tuple(e.get(k) for k in variant) != tuple(entry[k] for k in variant)] + [entry]
    path.write_text(json.dumps(stored, indent=1) + "\n")
    console.print({k: v for k, v in entry.items() if k != "samples"})
    return 0 if entry["drained"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
