"""A whole profile: N runs at a time, each configuration asked of the study, each result stored and
told back, until the run count or the time budget is spent or the user stops it.

Each worker keeps its copy running between its runs (a `CopySlot`, unless the plan says otherwise): the next run
at the same load and recovery settings paces it at its own interval instead of starting a cluster.

Stopping sets one event (the CLI sets it on Ctrl-C or SIGTERM): runs in flight end at their next step
and clean up after themselves, completed runs stay stored, and the interrupted trials are queued again
by the next `--resume`. The loop waits for every run to be cleaned up before it returns.

With a guard (chronos.profiler.live_watch), no run starts while the guard holds the live job out of its band: the
slot waits, GUARD_RECHECK_S at a time, at most MAX_PAUSE_S per run (a live job whose own load grew would otherwise
stall the profile for good; the pause is reported either way).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from chronos.errors import InvalidInput
from chronos.profiler.budget_fit import FittedRun, fit_to_budget
from chronos.profiler.events import ProfileEvents
from chronos.profiler.live_watch import GuardVerdict
from chronos.profiler.records import ProfileRun, RecoveryVariant, RunConfig
from chronos.profiler.run import ClusterPool, CopySlot, ProfilingCluster, RunInterrupted, RunPlan, execute_run
from chronos.profiler.store import ProfileStore
from chronos.profiler.study import ProfileStudy, QosTargets, boundary_distance


@dataclass(frozen=True)
class ProfileLimits:
    parallel: int = 2
    max_runs: int | None = None  # completed runs in this profile, resumed ones included
    budget_s: float | None = None  # wall time of this invocation


@dataclass(frozen=True)
class ProfileOutcome:
    completed: int
    failed: int
    requeued: int
    interrupted: bool
    elapsed_s: float
    pauses: int = 0  # runs held back while the live job was out of its band
    paused_s: float = 0.0
    copies: int = 0  # clusters started for the runs: fewer than the runs when a worker's copy served its next run


GUARD_RECHECK_S = 5.0
MAX_PAUSE_S = 120.0
# Kept out of the budget for stopping the last copy (cancel, cluster down, topics deleted: ~7 s measured here), which
# comes after the last run: a 10-minute held-out profile ended at 600.6 s without it.
STOP_ALLOWANCE_S = 15.0
PACE_BOUNDS = (0.5, 1.5)  # how far this profile's own runs may move the estimate of the next one


class _CountedPool:
    """The profile's pool, counting the clusters its runs start (the outcome says how many runs a copy served)."""

    def __init__(self, inner: ClusterPool) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.started = 0

    def acquire(self, run_id: str, recovery: RecoveryVariant | None = None) -> ProfilingCluster:
        cluster = self._inner.acquire(run_id, recovery)
        with self._lock:
            self.started += 1
        return cluster

    def release(self, cluster: ProfilingCluster) -> None:
        self._inner.release(cluster)


def pace_factor(runs: list[tuple[float, float]]) -> float:
    """How long this profile's completed runs took against their estimates ((took s, estimated s) each): the largest
    ratio, within PACE_BOUNDS; 1 before any. `RunPlan.estimate_s` is a rough a-priori sum (60 s to recover a fault);
    the demo's runs took 0.62-0.73 of it, and a budget judged by it alone ended a 10-minute profile at 7.5 min with 3
    runs. The largest, not the median: by the median (0.69) a zones profile's 36 s run, which took 0.82, ended it at
    619 s of 600."""
    ratios = [took / estimated for took, estimated in runs if estimated > 0]
    return min(PACE_BOUNDS[1], max(PACE_BOUNDS[0], max(ratios))) if ratios else 1.0


def check_budget(plan: RunPlan, limits: ProfileLimits, smallest_interval_s: float) -> None:
    if limits.budget_s is not None and limits.budget_s < plan.estimate_s(smallest_interval_s):
        raise InvalidInput(f"a budget of {limits.budget_s:g} s is too small for one profiling run "
                           f"(~{plan.estimate_s(smallest_interval_s):.0f} s at the smallest interval)")


def run_profile(
    plan: RunPlan,
    study: ProfileStudy,
    store: ProfileStore,
    pool: ClusterPool,
    limits: ProfileLimits,
    targets: QosTargets,
    *,
    stop: threading.Event,
    events: ProfileEvents | None = None,
    clock: Callable[[], float] = time.monotonic,
    execute: Callable[..., ProfileRun] = execute_run,
    guard: Callable[[], GuardVerdict] | None = None,
    recheck_s: float = GUARD_RECHECK_S,
) -> ProfileOutcome:
    events = events or ProfileEvents()
    start = clock()
    lock = threading.Lock()
    pool = counted = _CountedPool(pool)
    requeued = study.requeue_interrupted()
    counts = {"completed": 0, "failed": 0, "asked": 0}
    estimated: dict[int, float] = {}  # per trial asked: its estimated wall time
    took: list[tuple[float, float]] = []  # per completed run: (its wall time, its estimate)
    paused: dict[str, float] = {"pauses": 0, "seconds": 0.0}

    def wait_for_the_live_job(slot: int, copies: CopySlot | None) -> None:
        """Hold this slot's next run while the guard says the live job is out of its band, its copy stopped."""
        if guard is None:
            return
        verdict = guard()
        if verdict.admit:
            return
        if copies is not None:
            events.run_phase(slot, "stopping the copy: the live job is out of its band")
            copies.close()
        since = clock()
        with lock:
            paused["pauses"] += 1
        while not verdict.admit and not stop.is_set() and clock() - since < MAX_PAUSE_S:
            events.run_phase(slot, f"paused: {verdict.why}")
            stop.wait(recheck_s)
            verdict = guard()
        with lock:
            paused["seconds"] += clock() - since
    done_before = study.completed()

    def wanted() -> bool:
        """Whether another run is to start at all (lock held)."""
        return not stop.is_set() and (limits.max_runs is None or done_before + counts["asked"] < limits.max_runs)

    def next_trial(copies: CopySlot | None) -> tuple[int, RunConfig, FittedRun] | None:
        """The next configuration and the plan to run it by: the profile's, or what of it fits the budget left
        (chronos.profiler.budget_fit: its steady window alone, or a shorter interval), so the budget's last minutes
        still give the models a point. None: nothing more fits, or nothing more is wanted."""
        with lock:
            if not wanted():
                return None
            number, config = study.ask()
            running = copies is not None and copies.running is not None and copies.running.serves(config)
            left = None if limits.budget_s is None else limits.budget_s - STOP_ALLOWANCE_S - (clock() - start)
            fitted = fit_to_budget(plan, config.interval_ms // 1000, number, left_s=left, factor=pace_factor(took),
                                   copy_running=running, interval_min_s=study.space.interval_min_s)
            if fitted is None:
                return None  # no time left for it: it stays RUNNING in the study; a resume queues it again
            if fitted.interval_s * 1000 != config.interval_ms:
                number, config = study.substitute(number, replace(config, interval_ms=fitted.interval_s * 1000))
            estimated[number] = fitted.plan.estimate_s(fitted.interval_s, number, copy_running=running)
            counts["asked"] += 1
            return number, config, fitted

    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        try:
            work(slot)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)
            stop.set()

    def work(slot: int) -> None:
        copies = CopySlot(pool) if plan.reuse_copies else None
        try:
            runs(slot, copies)
        finally:
            if copies is not None and copies.running is not None:
                events.run_phase(slot, "cleaning up")
                copies.close(cancel=not stop.is_set())

    def runs(slot: int, copies: CopySlot | None) -> None:
        while True:
            with lock:
                if not wanted():
                    return
            wait_for_the_live_job(slot, copies)
            if (trial := next_trial(copies)) is None:
                return
            number, config, fitted = trial
            events.run_started(slot, number, config)
            if fitted.why:
                events.run_phase(slot, fitted.why)
            try:
                run = execute(fitted.plan, number, config, pool, stop=stop, slot=copies,
                              on_phase=lambda phase: events.run_phase(slot, phase))
            except RunInterrupted:
                return  # the trial stays RUNNING in the study: a resumed profile runs it again
            with lock:
                store.save_run(run)
                value = boundary_distance(run, targets, plan.timeout_s) if run.status == "completed" else None
                study.tell(number, value)
                counts["completed" if run.status == "completed" else "failed"] += 1
                if run.status == "completed" and number in estimated:
                    took.append(((run.ended_ms - run.started_ms) / 1000, estimated[number]))
            events.run_finished(slot, run)

    # Not daemons: the interpreter must not exit under a run that is still starting or cleaning up a cluster.
    threads = [threading.Thread(target=worker, args=(slot,)) for slot in range(limits.parallel)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        try:
            for thread in threads:
                thread.join(0.5)
        except KeyboardInterrupt:  # callers that install no handler of their own (the CLI does)
            stop.set()
    if errors:
        raise errors[0]
    return ProfileOutcome(counts["completed"], counts["failed"], requeued, stop.is_set(), clock() - start,
                          int(paused["pauses"]), round(paused["seconds"], 1), counted.started)
