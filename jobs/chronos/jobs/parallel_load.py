"""Several load-generator processes as one: kafka-python's sender thread shares the GIL with event
generation, which caps one process near 8k events/s on this kind of machine.

Each worker owns a disjoint range of vehicles and a share of the rate; the parent adds up their
progress, and sends the end-of-run watermark flush only after every worker has finished, so no
worker's events arrive behind it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import ChronosError
from chronos.jobs.fleet import VehicleFleet, flush_event
from chronos.jobs.loadgen import KafkaEventSink, LoadProgress, LoadReport, run_load
from chronos.rates import RateProfile, ScaledRate


@dataclass(frozen=True)
class LoadPlan:
    bootstrap: str
    topic: str
    profile: RateProfile
    vehicles: int
    seed: int = 0
    run_id: str = "run"
    duration_s: float | None = None
    count: int | None = None
    workers: int = 1
    niceness: int = 0  # the workers' OS priority: a profiling copy's load runs below the live job
    security: KafkaSecurity = PLAINTEXT

    def share(self, worker: int) -> tuple[int, int, int | None]:
        """(first vehicle, vehicles, events) of one worker."""
        per, extra = divmod(self.vehicles, self.workers)
        first = worker * per + min(worker, extra)
        count = None
        if self.count is not None:
            each, rest = divmod(self.count, self.workers)
            count = each + (1 if worker < rest else 0)
        return first, per + (1 if worker < extra else 0), count


@dataclass(frozen=True)
class WorkerFailed:
    """What a worker sends instead of its report when it fails: the parent says it in one line."""

    index: int
    message: str


WorkerBody = Callable[[Any, int, Synchronized, Event], LoadReport]  # type: ignore[type-arg]


ORPHAN_POLL_S = 1.0
ORPHAN_EXIT_S = 30.0  # after its parent is gone, the longest a worker may take to wind down before it is ended


def _stop_when_orphaned(parent: int, stop: Event, poll_s: float = ORPHAN_POLL_S) -> None:
    """A worker whose parent is gone stops (and ends, if stopping hangs): a daemon process is only ended by a parent
    that exits normally, so a `chronos profile run` killed with SIGKILL left its copy's load workers producing for
    good (two of them held 14 GiB here 1.5 hours later, and a later profile found no memory for its clusters)."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    stop.set()
    time.sleep(ORPHAN_EXIT_S)
    os._exit(1)


def _worker(body: WorkerBody, plan: Any, index: int, sent: Synchronized, stop: Event, results: mp.Queue,  # type: ignore[type-arg]
            niceness: int = 0) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the parent stops us
    threading.Thread(target=_stop_when_orphaned, args=(os.getppid(), stop), daemon=True).start()
    if niceness:
        os.nice(niceness)  # a profiling copy's load: below the live job's processes (RunWorkers.niceness)
    try:
        results.put(body(plan, index, sent, stop))
    except Exception as exc:  # noqa: BLE001 - a worker's failure goes to the parent, never a traceback on stderr
        results.put(WorkerFailed(index, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        raise SystemExit(1) from None


def _produce(plan: LoadPlan, index: int, sent: Synchronized, stop: Event) -> LoadReport:  # type: ignore[type-arg]
    first, vehicles, count = plan.share(index)
    fleet = VehicleFleet(vehicles, seed=plan.seed + index, run_id=f"{plan.run_id}-w{index}", first_vehicle=first)
    sink = KafkaEventSink(plan.bootstrap, plan.topic, plan.security)
    last = [0]

    def progress(p: LoadProgress) -> None:
        with sent.get_lock():
            sent.value += p.sent - last[0]
        last[0] = p.sent

    report = run_load(sink, fleet, ScaledRate(plan.profile, 1 / plan.workers), duration_s=plan.duration_s,
                      max_events=count, on_progress=progress, report_every_s=0.5, should_stop=stop.is_set)
    sink.close()
    with sent.get_lock():
        sent.value += report.sent - last[0]
    return report


def run_parallel_load(
    plan: LoadPlan,
    *,
    on_progress: Callable[[LoadProgress], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    close_windows: bool = False,
) -> LoadReport:
    if plan.workers < 1 or plan.workers > plan.vehicles:
        raise ValueError("workers must be between 1 and the number of vehicles")
    start = time.monotonic()
    reports = run_worker_processes(_produce, plan, plan.workers, plan.profile, on_progress=on_progress,
                                   should_stop=should_stop, niceness=plan.niceness)
    if close_windows:
        sink = KafkaEventSink(plan.bootstrap, plan.topic, plan.security)
        for partition in sink.partitions():
            sink.send(None, flush_event(int(time.time() * 1000)), partition=partition)
        sink.close()
    elapsed = time.monotonic() - start
    counts: Counter[str] = Counter()
    for report in reports:
        counts.update(dict(report.per_vehicle))
    total = sum(r.sent for r in reports)
    return LoadReport(total, elapsed, total / elapsed if elapsed > 0 else 0.0, tuple(sorted(counts.items())))


def run_worker_processes(
    body: WorkerBody,
    plan: Any,
    workers: int,
    profile: RateProfile,
    *,
    on_progress: Callable[[LoadProgress], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    niceness: int = 0,
) -> list[LoadReport]:
    """Run `body(plan, index, sent, stop)` in `workers` spawned processes (picklable plan, module-level body; at
    `niceness` below this process's OS priority), adding up their progress; a worker that fails stops the others
    and is said in one line."""
    ctx = mp.get_context("spawn")
    sent = ctx.Value("q", 0)
    stop = ctx.Event()
    results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_worker, args=(body, plan, i, sent, stop, results, niceness),
                         daemon=True) for i in range(workers)]
    start = time.monotonic()
    for proc in procs:
        proc.start()
    reports: list[LoadReport] = []
    last_t, last_sent = start, 0
    while len(reports) < workers:
        if should_stop():
            stop.set()
        try:
            got = results.get(timeout=1.0)
        except queue.Empty:
            got = None
        if isinstance(got, WorkerFailed):
            stop.set()
            for proc in procs:
                proc.join(10)
            raise ChronosError(f"the load generator failed: worker {got.index}: {got.message}")
        if got is not None:
            reports.append(got)
            continue
        dead = [(i, p.exitcode) for i, p in enumerate(procs) if not p.is_alive() and p.exitcode not in (0, None)]
        if dead or (not any(p.is_alive() for p in procs) and results.empty()):
            stop.set()
            for proc in procs:
                proc.join(10)
            which = f"worker {dead[0][0]} exited with {dead[0][1]}" if dead else "every worker exited"
            raise ChronosError(f"the load generator failed: {which} before its work was done; see its output")
        now = time.monotonic()
        if on_progress is not None:
            total = int(sent.value)
            on_progress(LoadProgress(now - start, total, profile.rate_at(now - start), (total - last_sent) / (now - last_t)))
            last_t, last_sent = now, total
    for proc in procs:
        proc.join(10)
    return reports
