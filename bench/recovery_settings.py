"""Recovery per phase after a worst-case TaskManager kill, at Flink's defaults and at the settings chronos proposes
(`chronos recommend --apply`: heartbeats from the measured pauses, a shorter restart delay, a spare TaskManager), paired on
one stack and one job; then the pauses: how many false failovers each arm's timeout allows.

    .venv/bin/python bench/recovery_settings.py [--rate 2000] [--interval 2] [--kills 5] [--warmup 20]
    .venv/bin/python bench/recovery_settings.py --recompute bench/results/recovery_settings*.json
    .venv/bin/python bench/recovery_settings.py --cost          # a spare TaskManager's CPU and memory under load

(`--recompute`: the model comparison of stored runs done again with the models as they are now, no stack.)

Both arms run the demo job under `--rate` events/s from a separate `chronos load run` process; each kill is fired
`--before` s before the next checkpoint (the worst case) and measured by `chronos.chaos.measure_recovery`:
detection (the job leaves RUNNING), every task RUNNING again, back in the steady-state band (the goal: <= 12 s mean
over >= 5 kills). The arms switch by `chronos recommend --apply` (the job stopped with a savepoint and resubmitted).
Writes bench/results/recovery_settings.json as it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console
from rich.table import Table

from chronos.chaos.measure import measure_recovery
from chronos.chaos.timing import WorstCase
from chronos.flink.distribution import find_distribution
from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.topics import ensure_topics
from chronos.model import CheckpointSettings, FaultRecord, RecoveryMeasurement, SignalSample
from chronos.optimizer.models import family_names, make_family
from chronos.optimizer.phase_model import fit_phase_model, held_out_by_setting
from chronos.optimizer.phase_observations import phase_observations
from chronos.optimizer.recovery_config import in_force
from chronos.signals.live import LiveSignals
from chronos.signals.taskmanager_pauses import watch_pauses
from chronos.stack.faults import KillTaskManager, PauseTaskManager
from chronos.stack.flink_cluster import start_taskmanager
from chronos.stack.helpers import start_helper, stop_helper
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.service_account import account_of
from chronos.stack.state import StackState, load_state, save_state
from chronos.tune.journal import Cadence
from chronos.tune.memory_journal import MemoryJournal
from chronos.tune.pacer import Pacer

CACHE = default_cache_dir()
BETWEEN = ["--set", "heartbeat.interval=2s", "--set", "heartbeat.timeout=20s", "--set",
           "restart-strategy.fixed-delay.delay=1s"]
RESULTS = Path(__file__).parent / "results"
console = Console(stderr=True)


def cli(*args: str, timeout: float = 600) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "chronos.cli.main", *args, "--json"], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"chronos {' '.join(args)}: {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout))


def phases(m: dict[str, Any]) -> dict[str, float | None]:
    at = m["fault"]["injected_wall_ms"]

    def since(key: str) -> float | None:
        return None if m[key] is None else (m[key] - at) / 1000

    return {"detect_s": since("detected_ms"), "running_s": since("running_ms"), "back_in_band_s": m["recovery_s"]}


class LateReplacementKill:
    """A TaskManager kill whose replacement starts `after_s` later instead of at once: on one 2-core host the
    replacement's JVM start competes with the catch-up of a job restarted on a spare (an experiment, not a
    setting chronos makes; a cluster manager on other hosts would not compete)."""

    def __init__(self, stack_dir: Path, after_s: float) -> None:
        self._stack_dir, self._after_s = stack_dir, after_s
        self._kill = KillTaskManager(stack_dir, replace=False)

    def inject(self) -> FaultRecord:
        record = self._kill.inject()
        threading.Timer(self._after_s, self._replace).start()
        return record

    def _replace(self) -> None:
        state = load_state(self._stack_dir)
        if state is not None:
            new = start_taskmanager(find_distribution(), state.flink_home, account_of(Path(state.services_dir)))
            save_state(state.model_copy(update={"taskmanagers": (*state.taskmanagers, new)}))

    def rollback(self) -> None:
        self._kill.rollback()


class CpuTrace:
    """Every TaskManager JVM of the stack (the replacement included, read from the state each tick): its CPU (% of
    one core) and age every `every_s`, to tell on which one a job caught up and what ran beside it."""

    def __init__(self, stack_dir: Path, every_s: float = 0.5) -> None:
        self._stack_dir, self._every_s = stack_dir, every_s
        self._stop = threading.Event()
        self.ticks: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        known: dict[int, psutil.Process] = {}
        while not self._stop.wait(self._every_s):
            state = load_state(self._stack_dir)
            tick: dict[str, Any] = {"at_ms": int(time.time() * 1000), "load1": os.getloadavg()[0], "tms": {}}
            for record in state.taskmanagers if state else ():
                try:
                    proc = known.setdefault(record.pid, psutil.Process(record.pid))
                    cpu = proc.cpu_percent(None)
                    tick["tms"][str(record.pid)] = {"cpu": round(cpu, 1),
                                                    "age_s": round(time.time() - proc.create_time(), 1)}
                except psutil.Error:
                    continue
            self.ticks.append(tick)

    def close(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(5)
        return self.ticks


def _keep(into: list[dict[str, Any]], sample: SignalSample) -> None:
    into.append(asdict(sample))


class QuietPacing:
    """The pacer's observer in this bench: it counts what the pacer triggered, nothing more."""

    def __init__(self) -> None:
        self.outcomes: dict[str, int] = {}

    def triggered(self, job_name: str, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        return None

    def cadence(self, job_name: str, entry: Cadence) -> None:
        return None

    def message(self, text: str) -> None:
        console.print(f"  pacer: {text}")


def paced(client: FlinkRestClient, job: str, name: str, interval_s: float) -> tuple[threading.Event, QuietPacing]:
    """The job paced by chronos's pacer at its own interval (what `chronos tune --realize pace` runs): Flink's
    timer holds the cadence, the pacer adds the commits after a restore."""
    observer, stop = QuietPacing(), threading.Event()
    pacer = Pacer(RestCheckpointTrigger(client), MemoryJournal(), observer, name)
    pacer.follow(job)
    pacer.pace(job, int(interval_s * 1000), int(interval_s * 1000), "bench: paced at the job's own interval")
    threading.Thread(target=pacer.run, args=(stop,), daemon=True).start()
    return stop, observer


def kills(state: StackState, client: FlinkRestClient, job: str, settings: DemoSettings, arm: str,
          args: argparse.Namespace) -> list[dict[str, Any]]:
    signals = LiveSignals(client, job, settings.name, state.bootstrap, settings.input_topic, settings.output_topic,
                          state.prometheus_urls)
    rows = []
    stop_pacing, pacing = paced(client, job, settings.name, args.interval) if args.paced else (None, None)
    try:
        for i in range(args.kills):
            fault = (LateReplacementKill(state.stack_dir_path, args.replace_after) if args.replace_after
                     else KillTaskManager(state.stack_dir_path))
            trace = CpuTrace(state.stack_dir_path) if args.trace else None
            samples: list[dict[str, Any]] = []
            m = measure_recovery(signals, fault, WorstCase(before_s=args.before),
                                 warmup_s=args.warmup, hold_s=args.hold, timeout_s=args.timeout,
                                 on_sample=partial(_keep, samples),
                                 settings_in_force=recovery_settings_in_force(client, state.stack_dir_path))
            row: dict[str, Any] = {"arm": arm, "kill": i + 1, **phases(asdict(m)), "measurement": asdict(m)}
            if trace is not None:
                start = m.fault.injected_wall_ms - 5000
                row["cpu_trace"] = [t for t in trace.close() if t["at_ms"] >= start]
                row["samples"] = [s for s in samples if s["at_ms"] >= start]
            rows.append(row)
            console.print(f"{arm} kill {i + 1}: detect {row['detect_s']} s, all running {row['running_s']} s, "
                          f"back in band {row['back_in_band_s']} s")
            if pacing is not None:
                row["pacer_outcomes"] = dict(pacing.outcomes)
    finally:
        if stop_pacing is not None:
            stop_pacing.set()
        signals.close()
    return rows


def pauses(state: StackState, client: FlinkRestClient, job: str, arm: str, timeout_s: float) -> dict[str, Any]:
    """Pauses of 3x the longest measured, five times: each that fails the job over is a false failover."""
    evidence, samples = watch_pauses(client, 20, 1.0)
    pause_s = max(3 * evidence.longest_s, 1.0)
    false = 0
    for _ in range(5):
        before = len(client.exceptions(job).exception_history.entries)
        PauseTaskManager(state.stack_dir_path, seconds=pause_s).inject()
        time.sleep(timeout_s + 2)
        false += len(client.exceptions(job).exception_history.entries) > before
        deadline = time.monotonic() + 120
        while not client.job(job).all_running and time.monotonic() < deadline:
            time.sleep(1)
    console.print(f"{arm}: 5 pauses of {pause_s:.2f} s (3x the longest measured, {evidence.longest_s} s): "
                  f"{false} failed the job over")
    return {"arm": arm, "evidence": asdict(evidence), "samples": samples, "pause_s": pause_s, "pauses": 5,
            "false_failovers": false}


def recovery_settings_in_force(client: FlinkRestClient, stack_dir: Path) -> tuple[tuple[str, str], ...]:
    state = load_state(stack_dir)
    return in_force(client.jobmanager_config(), state.spare_taskmanagers if state is not None else 0)


def with_stack_delay(settings: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    """Runs before the whole configuration in force was stored kept only the keys set over the stack's: its
    restart delay (2 s, fixed-delay, chronos/stack/flink_cluster.py) was in force unless one was set."""
    pairs = dict((k, v) for k, v in settings)
    pairs.setdefault("restart-strategy.type", "fixed-delay")
    pairs.setdefault("restart-strategy.fixed-delay.delay", "2 s")
    return tuple(pairs.items())


def compare_models(rows: Sequence[dict[str, Any]], rate: float = 2000.0) -> dict[str, Any]:
    """Every setting's recoveries (back in band) predicted from the other settings' alone: the phase model (which
    sees the settings) against every black-box family the tuner fits, on interval and rate (which cannot)."""
    import numpy as np

    measured = [(RecoveryMeasurement(**{**r["measurement"], "fault": FaultRecord(**r["measurement"]["fault"]),
                                        "settings_in_force": with_stack_delay(r["measurement"]["settings_in_force"])}),
                 r["arm"]) for r in rows]
    usable = [(m, arm) for m, arm in measured if m.recovered_ms is not None]
    observed = phase_observations([(m, rate, 0.0) for m, _ in usable])
    observations = [(o, arm) for o, (_, arm) in zip(observed, usable, strict=True)]
    arms = list(dict.fromkeys(arm for _, arm in observations))
    if len(arms) < 2:
        return {"note": "fewer than two settings measured"}
    held_out = held_out_by_setting([o for o, _ in observations])
    out: dict[str, Any] = {"phase_model_held_out_mape": None if held_out is None else round(held_out, 4)}
    errors: dict[str, list[float]] = {name: [] for name in family_names()}
    for held in arms:
        train = [o for o, arm in observations if arm != held]
        test = [o for o, arm in observations if arm == held]
        x = np.asarray([[o.conditions.checkpoint_age_s, o.conditions.rate / 1000] for o in train])
        for name in family_names():
            family = make_family(name, 0).fit(x, [o.measured.total_s for o in train])
            for o in test:
                predicted = float(family.predict(np.asarray([[o.conditions.checkpoint_age_s,
                                                              o.conditions.rate / 1000]]))[0])
                errors[name].append(abs(predicted - o.measured.total_s) / o.measured.total_s)
        model = fit_phase_model(train)
        out[held] = {"measured_mean_s": round(statistics.mean(o.measured.total_s for o in test), 2),
                     "phase_model_mean_s": round(statistics.mean(
                         model.predict(o.settings, o.conditions).total_s for o in test), 2),
                     "phases_measured": {k: round(statistics.mean(getattr(o.measured, k) for o in test), 2)
                                         for k in ("detect_s", "reschedule_s", "catchup_s")},
                     "phases_predicted": {k: round(statistics.mean(getattr(model.predict(o.settings, o.conditions), k)
                                                                   for o in test), 2)
                                          for k in ("detect_s", "reschedule_s", "catchup_s")}}
    out["black_box_held_out_mape"] = {name: round(statistics.mean(e), 4) for name, e in errors.items()}
    out["linear_held_out_mape"] = out["black_box_held_out_mape"]["linear"]
    return out


def recompute(paths: Sequence[Path]) -> None:
    for path in paths:
        result = json.loads(path.read_text())
        if any("settings_in_force" not in r["measurement"] for r in result["rows"]):
            console.print(f"{path.name}: no settings stored with its recoveries (measured before they were); left as is")
            continue
        result["models"] = compare_models(result["rows"], result["settings"]["rate"])
        path.write_text(json.dumps(result, indent=1) + "\n")
        models = result["models"]
        if "black_box_held_out_mape" not in models:
            console.print(f"{path.name}: {models}")
            continue
        phase = models["phase_model_held_out_mape"]
        console.print(f"{path.name}: phase model {'n/a' if phase is None else f'{phase:.0%}'} held out by setting; "
                      + ", ".join(f"{k} {v:.0%}" for k, v in models["black_box_held_out_mape"].items()))


def taskmanager_cpu(state: StackState | None, seconds: float = 10.0) -> list[float]:
    """Each TaskManager's CPU (% of one core) over `seconds` of the running job, busiest first: a spare's cost is
    the idle one's."""
    processes = [psutil.Process(tm.pid) for tm in (state.taskmanagers if state else ())]
    for process in processes:
        process.cpu_percent(None)
    time.sleep(seconds)
    return sorted((round(p.cpu_percent(None), 1) for p in processes), reverse=True)


def current_job(client: FlinkRestClient, name: str) -> str:
    return next(j.jid for j in client.jobs() if j.name == name and j.state == "RUNNING")


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    out: dict[str, dict[str, float | int | None]] = {}
    for arm in dict.fromkeys(r["arm"] for r in rows):
        mine = [r for r in rows if r["arm"] == arm]
        out[arm] = {"kills": len(mine), "not_recovered": sum(r["back_in_band_s"] is None for r in mine)}
        for key in ("detect_s", "running_s", "back_in_band_s"):
            values = [r[key] for r in mine if r[key] is not None]
            out[arm][f"{key}_mean"] = round(statistics.mean(values), 2) if values else None
            out[arm][f"{key}_max"] = round(max(values), 2) if values else None
    return out


def spare_cost(args: argparse.Namespace) -> None:
    """A stack with one spare TaskManager, the demo job under `--rate`: each TaskManager's CPU and memory over 30 s
    (the idle one is the spare). Writes bench/results/recovery_cost.json."""
    with tempfile.TemporaryDirectory() as tmp:
        state, _ = up(StackOptions(Path(tmp), CACHE, spare_taskmanagers=1))
        try:
            suffix = uuid.uuid4().hex[:6]
            settings = DemoSettings(bootstrap=state.bootstrap, input_topic=f"in-{suffix}", output_topic=f"out-{suffix}",
                                    group_id=f"g-{suffix}", name=f"cost-{suffix}", parallelism=2)
            ensure_topics(state.bootstrap, [settings.input_topic, settings.output_topic], partitions=2)
            start_helper(state.stack_dir_path, "cost-load", ["load", "run", "--rate", str(args.rate), "--workers", "1",
                                                             "--topic", settings.input_topic, "--duration", "600",
                                                             "--stack-dir", state.stack_dir])
            with FlinkRestClient(state.rest_url) as client:
                job = RestSubmitter(client, find_distribution().python_jar).submit(
                    demo_spec(settings), CheckpointSettings(int(args.interval * 1000)))
                client.wait_until_running(job, 120)
                time.sleep(30)
                cpu = taskmanager_cpu(state, 30.0)
                rss = sorted((round(psutil.Process(tm.pid).memory_info().rss / 2**20) for tm in state.taskmanagers),
                             reverse=True)
        finally:
            stop_helper(state.stack_dir_path, "cost-load")
            down(Path(tmp), purge=True)
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": "2 cores, 24 GiB", "rate": args.rate,
           "interval_s": args.interval, "taskmanager_cpu_pct": cpu, "taskmanager_rss_mib": rss,
           "note": "busiest first; the idle one is the spare"}
    (RESULTS / "recovery_cost.json").write_text(json.dumps(out, indent=1) + "\n")
    console.print(json.dumps(out))


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--before", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--recompute", type=Path, nargs="+", help="stored results to compare the models on again")
    parser.add_argument("--cost", action="store_true", help="only what a spare TaskManager costs under the load")
    parser.add_argument("--arms", default="flink defaults,between,chronos proposed")
    parser.add_argument("--replace-after", type=float, default=0.0,
                        help="start the killed TaskManager's replacement this much later (0: at once)")
    parser.add_argument("--trace", action="store_true",
                        help="store each kill's signal samples and every TaskManager's CPU every 0.5 s with it")
    parser.add_argument("--paced", action="store_true",
                        help="chronos's pacer follows the job at its own interval (and commits after each restore)")
    parser.add_argument("--out", default="recovery_settings.json")
    args = parser.parse_args(argv)
    if args.recompute:
        recompute(args.recompute)
        return
    if args.cost:
        spare_cost(args)
        return
    RESULTS.mkdir(exist_ok=True)
    raw = RESULTS / args.out
    started = time.strftime("%Y-%m-%d %H:%M")
    rows: list[dict[str, Any]] = []
    pause_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        state, _ = up(StackOptions(Path(tmp), CACHE))
        sd = ["--stack-dir", state.stack_dir]
        try:
            suffix = uuid.uuid4().hex[:6]
            settings = DemoSettings(bootstrap=state.bootstrap, input_topic=f"in-{suffix}", output_topic=f"out-{suffix}",
                                    group_id=f"g-{suffix}", name=f"phases-{suffix}", parallelism=2)
            ensure_topics(state.bootstrap, [settings.input_topic, settings.output_topic], partitions=2)
            spec, checkpoints = demo_spec(settings), CheckpointSettings(int(args.interval * 1000))
            start_helper(state.stack_dir_path, "phases-load", ["load", "run", "--rate", str(args.rate), "--workers",
                                                               "1", "--topic", settings.input_topic, "--duration",
                                                               "7200", "--stack-dir", state.stack_dir])
            with FlinkRestClient(state.rest_url) as client:
                job = RestSubmitter(client, find_distribution().python_jar).submit(spec, checkpoints)
                JobRecordStore(state.stack_dir_path / "jobs").save(JobRecord(job, spec, checkpoints))  # resubmittable
                client.wait_until_running(job, 120)
                time.sleep(args.interval * 2 + 5)
                rss: dict[str, int] = {}
                cpu: dict[str, list[float]] = {}
                proposal: dict[str, Any] = {}
                for arm in args.arms.split(","):
                    if arm == "between":  # a third setting, so each is predicted from two others
                        cli("stack", "reconfigure", *BETWEEN, *sd)
                    if arm == "chronos proposed":  # what `chronos recommend` proposes from the pauses it measures
                        proposal = cli("recommend", "--watch", "20s", "--apply", *sd)
                    if arm != "flink defaults":
                        job = current_job(client, settings.name)
                        time.sleep(args.interval * 2 + 5)
                    rows += kills(state, client, job, settings, arm, args)
                    job = current_job(client, settings.name)
                    now = load_state(state.stack_dir_path)
                    if proposal:  # at the defaults a pause of seconds never reaches the 50 s timeout
                        pause_rows.append(pauses(state, client, job, arm, proposal["proposed"]["heartbeat_timeout_s"]))
                    rss[arm] = round(sum(psutil.Process(tm.pid).memory_info().rss
                                         for tm in (now.taskmanagers if now else ())) / 2**20)
                    cpu[arm] = taskmanager_cpu(now)
                    raw.write_text(json.dumps({
                        "date": started, "machine": "2 cores, 24 GiB", "settings": vars(args),
                        "summary": summary(rows), "models": compare_models(rows, args.rate), "proposal": proposal,
                        "pauses": pause_rows,
                        "taskmanager_rss_mib": rss, "taskmanager_cpu_pct": cpu, "rows": rows}, indent=1) + "\n")
        finally:
            stop_helper(state.stack_dir_path, "phases-load")
            down(Path(tmp), purge=True)
    table = Table("arm", "kills", "not recovered", "detect s (mean/max)", "all running s (mean/max)",
                  "back in band s (mean/max)", title=f"worst-case TaskManager kills at {args.rate:g} ev/s")
    for arm, s in summary(rows).items():
        table.add_row(arm, str(s["kills"]), str(s["not_recovered"]), f"{s['detect_s_mean']} / {s['detect_s_max']}",
                      f"{s['running_s_mean']} / {s['running_s_max']}",
                      f"{s['back_in_band_s_mean']} / {s['back_in_band_s_max']}")
    Console().print(table)
    console.print(f"wrote {raw}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main(sys.argv[1:])
