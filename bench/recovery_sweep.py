"""Recovery after a worst-case TaskManager loss, swept over checkpoint intervals and loads.

    .venv/bin/python bench/recovery_sweep.py [--intervals 2 5 10 20 30] [--loads 2000 6000] [--repeats 3]
                                             [--before 1] [--warmup 20] [--hold 15] [--timeout 180]

For every (load, interval): a fresh demo job on fresh topics, the load from a separate `chronos load
run` process, two checkpoints, then `repeats` TaskManager kills, each `--before` seconds before the next
checkpoint is due, each measured by `chronos.chaos.measure_recovery` (steady state learned from the
`--warmup` window before it). Writes every measurement to bench/results/recovery_sweep.json as it
goes, then a min/median/max table and bench/results/recovery_sweep.png (recovery time and records
replayed against interval, one line per load, bars from min to max).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from chronos.chaos.measure import measure_recovery
from chronos.chaos.timing import WorstCase
from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings, RecoveryMeasurement
from chronos.signals.live import LiveSignals
from chronos.stack.faults import KillTaskManager
from chronos.stack.helpers import start_helper, stop_helper
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.state import StackState

CACHE = default_cache_dir()  # as root /var/cache/chronos, readable by the service user
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)


@dataclass(frozen=True)
class Cell:
    """min/median/max of one (load, interval) over its repeats; recovered faults only for time."""

    load: float
    interval_s: float
    faults: int
    not_recovered: int
    recovery_s: tuple[float, float, float] | None
    replayed: tuple[float, float, float] | None
    checkpoint_age_s: tuple[float, float, float] | None


def _spread(values: Sequence[float]) -> tuple[float, float, float] | None:
    return (min(values), statistics.median(values), max(values)) if values else None


def summarise(rows: Sequence[dict[str, Any]]) -> list[Cell]:
    cells = []
    for load, interval in sorted({(r["load"], r["interval_s"]) for r in rows}):
        ms = [r["measurement"] for r in rows if (r["load"], r["interval_s"]) == (load, interval)]
        recovered = [m["recovery_s"] for m in ms if m["recovery_s"] is not None]
        cells.append(Cell(
            load, interval, len(ms), len(ms) - len(recovered), _spread(recovered),
            _spread([m["records_reprocessed"] for m in ms if m["records_reprocessed"] is not None]),
            _spread([m["checkpoint_age_at_fault_ms"] / 1000 for m in ms if m["checkpoint_age_at_fault_ms"] is not None]),
        ))
    return cells


def measure_cell(state: StackState, client: FlinkRestClient, load: float, interval_s: float,
                 args: argparse.Namespace) -> list[RecoveryMeasurement]:
    suffix = uuid.uuid4().hex[:6]
    settings = DemoSettings(bootstrap=state.bootstrap, input_topic=f"in-{suffix}", output_topic=f"out-{suffix}",
                            group_id=f"g-{suffix}", name=f"sweep-{suffix}", parallelism=2)
    ensure_topics(state.bootstrap, [settings.input_topic, settings.output_topic], partitions=2)
    job = RestSubmitter(client, find_distribution().python_jar).submit(demo_spec(settings),
                                                                      CheckpointSettings(int(interval_s * 1000)))
    client.wait_until_running(job, timeout_s=120)
    workers = "2" if load > 5000 else "1"
    start_helper(state.stack_dir_path, "sweep-load", ["load", "run", "--rate", str(load), "--workers", workers,
                                                      "--topic", settings.input_topic, "--duration", "7200",
                                                      "--stack-dir", state.stack_dir])
    signals = LiveSignals(client, job, settings.name, state.bootstrap, settings.input_topic, settings.output_topic,
                          state.prometheus_urls)
    out = []
    try:
        deadline = time.monotonic() + 3 * interval_s + 60
        while client.checkpoints(job).counts.completed < 2 and time.monotonic() < deadline:
            time.sleep(1)
        for i in range(args.repeats):
            m = measure_recovery(signals, KillTaskManager(state.stack_dir_path), WorstCase(before_s=args.before),
                                 warmup_s=args.warmup, hold_s=args.hold, timeout_s=args.timeout)
            out.append(m)
            console.print(f"load {load:g}/s interval {interval_s:g} s fault {i + 1}: "
                          + (f"recovered in {m.recovery_s:.1f} s" if m.recovery_s is not None else "NOT recovered")
                          + f", replayed {m.records_reprocessed}, checkpoint age {m.checkpoint_age_at_fault_ms} ms")
    finally:
        signals.close()
        stop_helper(state.stack_dir_path, "sweep-load")
        client.cancel(job)
    return out


def plot(cells: Sequence[Cell], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_replay) = plt.subplots(1, 2, figsize=(11, 4.2))
    for load in sorted({c.load for c in cells}):
        for ax, pick in ((ax_time, "recovery_s"), (ax_replay, "replayed")):
            points = [(c.interval_s, getattr(c, pick)) for c in cells if c.load == load and getattr(c, pick)]
            if not points:
                continue
            xs = [x for x, _ in points]
            med = [s[1] for _, s in points]
            err = [[s[1] - s[0] for _, s in points], [s[2] - s[1] for _, s in points]]
            ax.errorbar(xs, med, yerr=err, marker="o", capsize=4, label=f"{load:,.0f} events/s")
    ax_time.set(xlabel="checkpoint interval (s)", ylabel="recovery time (s), median, min-max",
                title="Recovery after a worst-case TaskManager kill")
    ax_replay.set(xlabel="checkpoint interval (s)", ylabel="records replayed", title="Records replayed")
    for ax in (ax_time, ax_replay):
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def show(cells: Sequence[Cell]) -> None:
    def fmt(spread: tuple[float, float, float] | None, digits: int) -> str:
        return "-" if spread is None else " / ".join(f"{v:,.{digits}f}" for v in spread)

    table = Table("load (ev/s)", "interval (s)", "faults", "not recovered", "recovery s (min/med/max)",
                  "replayed (min/med/max)", "ckpt age s (min/med/max)", title="worst-case TaskManager kill")
    for c in cells:
        table.add_row(f"{c.load:,.0f}", f"{c.interval_s:g}", str(c.faults), str(c.not_recovered),
                      fmt(c.recovery_s, 1), fmt(c.replayed, 0), fmt(c.checkpoint_age_s, 1))
    Console().print(table)


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--intervals", type=float, nargs="+", default=[2, 5, 10, 20, 30])
    parser.add_argument("--loads", type=float, nargs="+", default=[2000, 6000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=float, default=1.0, help="seconds before the next checkpoint")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--hold", type=float, default=15.0)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--plot-only", action="store_true", help="redraw the table and plot from the JSON")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    raw = RESULTS / "recovery_sweep.json"
    rows: list[dict[str, Any]] = json.loads(raw.read_text())["rows"] if args.plot_only else []
    if not args.plot_only:
        started = time.strftime("%Y-%m-%d %H:%M")
        with tempfile.TemporaryDirectory() as tmp:
            state, _ = up(StackOptions(Path(tmp), CACHE))
            try:
                with FlinkRestClient(state.rest_url) as client:
                    for load in args.loads:
                        for interval in args.intervals:
                            for m in measure_cell(state, client, load, interval, args):
                                rows.append({"load": load, "interval_s": interval, "measurement": asdict(m)})
                            raw.write_text(json.dumps({"date": started, "machine": "2 cores, 24 GiB",
                                                       "settings": vars(args), "rows": rows}, indent=1) + "\n")
            finally:
                down(Path(tmp), purge=True)
    cells = summarise(rows)
    show(cells)
    plot(cells, RESULTS / "recovery_sweep.png")
    console.print(f"wrote {raw} and {RESULTS / 'recovery_sweep.png'}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: stop the stack
    main(sys.argv[1:])
