"""Soak: `chronos tune` for half an hour beside a job under load while everything around it
fails, on a stack of its own.

    .venv/bin/python bench/soak.py [--minutes 32] [--out bench/results/soak.json]

Faults, in this order (offsets from the tuner's start, scaled with --minutes): the first model-fitting
child killed at start; the broker restarted (1/6 of the run); the JobManager paused (SIGSTOP) for 60 s, so
its REST API answers nothing (1/3); a TaskManager killed, and the model refit that follows paused until
its deadline (1/2); the broker restarted again (2/3). The load is a counted input stream (2,000 events/s, the
input topic's only writer) for the whole run; at the end the tuner gets SIGTERM and the output is checked for exactly-once.

Judged: the tuner still runs at the end and exits 0; each outage said once when it begins and once when it
ends (never repeated in between); it decides again after every fault; its RSS, sampled every 30 s, stays
flat (the slope of a least-squares line over the second half, in MB per hour); the job's output holds every
counted event exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
from rich.console import Console

from chronos.jobs.bounded_input import ExperimentInput
from chronos.jobs.output import OutputRecord
from chronos.jobs.topic_offsets import groupless_consumer
from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import ProfileStore
from chronos.stack.faults import KillTaskManager, RestartKafka
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.locations import default_cache_dir
from chronos.stack.ports import free_ports
from chronos.stack.processes import send
from chronos.stack.state import StackState

console = Console(stderr=True)
RESULTS = Path(__file__).parent / "results"
RATE = 2000.0  # events/s of the counted input
TARGETS = ["--latency-p99", "120s", "--recovery", "90s", "--interval-min", "2s", "--interval-max", "60s"]
CADENCE = ["--startup-grace", "30s", "--decide-every", "15s", "--collect-every", "5s", "--horizon", "2min",
           "--cooldown", "5min", "--fit-timeout", "90s", "--stall-after", "5min"]


def chronos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def write_profile(db: Path, job_name: str) -> None:
    """A replay-bound recovery profile (20 s + interval x rate / 2,000): the tuner's models, not the subject."""
    store = ProfileStore(db)
    store.create_profile("soak", job_name, 0, "{}")
    for n, (interval, rate) in enumerate(((i, r) for i in (2, 5, 10, 20, 40, 60) for r in (500, 2000, 5000)), 1):
        recoveries = tuple(RecoveryMeasurement(FaultRecord("kill-taskmanager", "tm", 0, 0.0), interval * 1000,
                                               "WorstCase", 1, 2, 3, (20 + interval * rate / 2000) * f, None, None,
                                               None, None) for f in (0.97, 1.03))
        steady = SteadyState(rate, None, None, 1000.0 * interval + 2000, 100.0, 1e5, 10.0)
        store.save_run(ProfileRun(f"s{n}", "soak", n, RunConfig(interval * 1000, 1.0), rate, "completed", 0, 1,
                                  steady, recoveries))
    store.close()


class TunerProcess:
    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "chronos.cli.main", "tune", "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL)
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith('{"event"'):
                try:
                    self.events.append({**json.loads(line), "t": time.monotonic()})
                except json.JSONDecodeError:
                    continue

    def fit_child(self, timeout_s: float) -> psutil.Process | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                try:
                    if "spawn_main" in " ".join(child.cmdline()):
                        return child
                except psutil.Error:
                    continue
            time.sleep(0.05)
        return None


def pause_jobmanager(state: StackState, seconds: float) -> None:
    assert send(state.jobmanager, signal.SIGSTOP).ours, "the JobManager is the stack's own"
    try:
        time.sleep(seconds)
    finally:
        send(state.jobmanager, signal.SIGCONT)


def whole_topic(bootstrap: str, topic: str, isolation: str) -> Iterator[tuple[Any, Any]]:
    """(partition, message) for every message of `topic` as `isolation` reads it, from the start to the end
    offsets of when it is called."""
    from kafka import TopicPartition

    consumer = groupless_consumer(bootstrap, isolation)
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            for tp, messages in consumer.poll(timeout_ms=1000, max_records=50_000).items():
                for m in messages:
                    yield tp, m
    finally:
        consumer.close()


def output_by_window(bootstrap: str, topic: str, prefix: str, isolation: str) -> dict[str, int]:
    """Counted events per window end in the output, as `isolation` reads it: on a delivery failure,
    the windows missing from read_committed but present in read_uncommitted were aborted by the sink;
    those missing from both were never produced."""
    counts: dict[str, int] = {}
    for _, m in whole_topic(bootstrap, topic, isolation):
        record = OutputRecord.parse(m.value)
        if record is not None and record.kind == "vehicle" and record.key.startswith(prefix + "-"):
            counts[record.window_end] = counts.get(record.window_end, 0) + record.event_count
    return dict(sorted(counts.items()))


def late_inputs(bootstrap: str, topic: str, prefix: str, bound_ms: int) -> int:
    """Counted events that sit in the input topic behind an event more than `bound_ms` newer in the same
    partition: the job's watermark (per partition, `bound_ms` behind the newest event) makes them late."""
    late, newest = 0, dict[Any, int]()
    mine = (prefix + "-").encode()
    for tp, m in whole_topic(bootstrap, topic, "read_uncommitted"):
        try:
            at = int(json.loads(m.value)["event_time"])
        except (ValueError, KeyError, TypeError):
            continue
        if m.key is not None and m.key.startswith(mine) and at < newest.get(tp, at) - bound_ms:
            late += 1
        newest[tp] = max(newest.get(tp, at), at)
    return late


def flink_jobs(rest_url: str) -> list[dict[str, Any]]:
    """Every job the cluster knows, with its state and its last exceptions (a delivery failure's witnesses)."""
    with httpx.Client(base_url=rest_url, timeout=10) as http:
        jobs = http.get("/jobs/overview").json().get("jobs", [])
        for job in jobs:
            history = http.get(f"/jobs/{job['jid']}/exceptions").json().get("exceptionHistory", {})
            job["exceptions"] = [{"at": e.get("timestamp"), "name": e.get("exceptionName"),
                                  "stack": (e.get("stacktrace") or "")[:600]} for e in history.get("entries", [])][:5]
        return [{k: j.get(k) for k in ("jid", "name", "state", "start-time", "end-time", "exceptions")} for j in jobs]


def slope_mb_per_hour(samples: list[tuple[float, float]]) -> float:
    second_half = samples[len(samples) // 2:]
    t = np.array([s[0] for s in second_half]) / 3600
    rss = np.array([s[1] for s in second_half])
    return float(np.polyfit(t, rss, 1)[0]) if len(second_half) >= 3 else float("nan")


def run(minutes: float, out: Path) -> dict[str, Any]:
    total_s = minutes * 60
    with tempfile.TemporaryDirectory(prefix="chronos-soak-") as tmp:
        stack_dir = Path(tmp) / "stack"
        state, _ = up(StackOptions(stack_dir, default_cache_dir(), slots=4))
        sd = ["--stack-dir", str(stack_dir)]
        tuner: TunerProcess | None = None
        counted: ExperimentInput | None = None
        try:
            submitted = chronos("job", "submit", "demo", "--interval", "30s", "--parallelism", "1", "--json", *sd)
            assert submitted.returncode == 0, submitted.stderr
            job_id = json.loads(submitted.stdout)["job_id"]
            db = Path(tmp) / "chronos.db"
            write_profile(db, "chronos-vehicle-stats")
            # The counted stream is the only writer of the input topic. With a second producer beside it, a broker
            # restart lets one producer's buffered events land after the other's newer ones: the event-time windows
            # then drop the older ones as late (a 2 s watermark bound), a loss of the job's design, not of delivery.
            counted = ExperimentInput(state.bootstrap, "vehicle-events", "vehicle-stats", rate=RATE, vehicles=200,
                                      run_id=uuid.uuid4().hex[:8])
            counted.start()
            port = free_ports(1)[0]
            tuner = TunerProcess(["--job", job_id, *TARGETS, *CADENCE, "--db", str(db), "--metrics-port", str(port),
                                  *sd])
            started = time.monotonic()
            faults: list[dict[str, Any]] = []
            rss: list[tuple[float, float]] = []
            healthz: list[int] = []

            def fault(name: str, action: Any) -> None:
                at = time.monotonic() - started
                console.print(f"[bold]{at:7.0f} s[/] {name}")
                detail = action()
                faults.append({"at_s": round(at, 1), "fault": name, "detail": str(detail or "")})

            def kill_first_fit() -> str:
                child = tuner.fit_child(60) if tuner else None
                if child is None:
                    return "no fit child seen"
                child.kill()
                return f"killed fit child {child.pid}"

            def kill_tm_then_pause_refit() -> str:
                KillTaskManager(stack_dir).inject()
                child = tuner.fit_child(300) if tuner else None  # the refit after the live failure is measured
                if child is None:
                    return "killed a TaskManager; no refit child seen"
                child.suspend()
                return f"killed a TaskManager; paused refit child {child.pid} (it is killed at the fit deadline)"

            schedule = [
                (0.0, "kill the first model-fitting child", kill_first_fit),
                (total_s / 6, "restart the broker", lambda: RestartKafka(stack_dir).inject()),
                (total_s / 3, "pause the JobManager 60 s (REST unreachable)", lambda: pause_jobmanager(state, 60)),
                (total_s / 2, "kill a TaskManager, pause the model refit", kill_tm_then_pause_refit),
                (2 * total_s / 3, "restart the broker again", lambda: RestartKafka(stack_dir).inject()),
            ]
            next_sample = 0.0
            while time.monotonic() - started < total_s:
                now = time.monotonic() - started
                if schedule and now >= schedule[0][0]:
                    _, name, action = schedule.pop(0)
                    fault(name, action)
                    continue
                if now >= next_sample:
                    next_sample = now + 30
                    if tuner.proc.poll() is not None:
                        raise RuntimeError(f"the tuner exited with {tuner.proc.returncode} at {now:.0f} s: "
                                           f"{(tuner.proc.stderr.read() if tuner.proc.stderr else '')[-2000:]}")
                    rss.append((now, psutil.Process(tuner.proc.pid).memory_info().rss / 2**20))
                    try:
                        healthz.append(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code)
                    except httpx.HTTPError:
                        healthz.append(0)
                time.sleep(1)
            alive = tuner.proc.poll() is None
            tuner.proc.send_signal(signal.SIGTERM)
            code = tuner.proc.wait(180)
            delivery = counted.finish(timeout_s=240)
            diagnosis: dict[str, Any] = {}
            if not delivery.ok:
                diagnosis = {
                    "jobs": flink_jobs(state.rest_url),
                    "committed_by_window": output_by_window(state.bootstrap, "vehicle-stats", counted.prefix,
                                                            "read_committed"),
                    "uncommitted_by_window": output_by_window(state.bootstrap, "vehicle-stats", counted.prefix,
                                                              "read_uncommitted"),
                    "input_late_by_watermark": late_inputs(state.bootstrap, "vehicle-events", counted.prefix, 2000),
                }
            events = tuner.events
            outages = [e for e in events if e["event"] == "outage"]
            decisions = [e for e in events if e["event"] == "decision"]
            decided_after = {f["fault"]: any(e["t"] - started > f["at_s"] + 90 for e in decisions) for f in faults}
            repeated = _repeated_outages(outages)
            result = {
                "date": time.strftime("%Y-%m-%d %H:%M"), "minutes": minutes, "machine": f"{os.cpu_count()} cores",
                "faults": faults, "tuner_alive_at_end": alive, "exit_code": code,
                "outages": [{k: e[k] for k in ("at", "source", "change", "error", "duration_s")} for e in outages],
                "outages_said_twice_in_a_row": repeated,
                "fit_failures": [e["error"] for e in events if e["event"] == "fit-failed"],
                "decisions": len(decisions), "decided_after_each_fault": decided_after,
                "retunes": [{k: e.get(k) for k in ("outcome", "interval_ms", "downtime_s")}
                            for e in events if e["event"] == "retune"],
                "failures_seen": len([e for e in events if e["event"] == "failure"]),
                "rss_mb": [round(r, 1) for _, r in rss], "rss_slope_mb_per_hour_second_half": round(slope_mb_per_hour(rss), 2),
                "healthz": healthz,
                "exactly_once": delivery.ok, "delivery": delivery.summary(), "diagnosis": diagnosis,
                "messages": [e["text"] for e in events if e["event"] in ("message", "fit-failed")],
            }
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=2) + "\n")
            return result
        finally:
            if tuner is not None and tuner.proc.poll() is None:
                tuner.proc.kill()
            if counted is not None:
                counted.close()
            down(stack_dir, purge=True)


def _repeated_outages(outages: list[dict[str, Any]]) -> list[str]:
    """Sources whose outage was said to begin again before it was said to end (should be none)."""
    open_now: set[str] = set()
    repeated = []
    for event in outages:
        if event["change"] == "began":
            if event["source"] in open_now:
                repeated.append(event["source"])
            open_now.add(event["source"])
        else:
            open_now.discard(event["source"])
    return repeated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=32.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    args = parser.parse_args()
    result = run(args.minutes, args.out)
    console.print_json(json.dumps({k: v for k, v in result.items() if k not in ("rss_mb", "messages", "healthz", "diagnosis")}))


if __name__ == "__main__":
    main()
