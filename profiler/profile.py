"""A whole profile: N runs at a time, each configuration asked of the study, each result stored and
told back, until the run count or the time budget is spent or the user stops it.

Stopping sets one event (the CLI sets it on Ctrl-C or SIGTERM): runs in flight end at their next step
and clean up after themselves, completed runs stay stored, and the interrupted trials are queued again
by the next `--resume`. The loop waits for every run to be cleaned up before it returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chronos.errors import InvalidInput
from chronos.profiler.events import ProfileEvents
from chronos.profiler.records import ProfileRun, RunConfig
from chronos.profiler.run import ClusterPool, RunInterrupted, RunPlan, execute_run
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
) -> ProfileOutcome:
    events = events or ProfileEvents()
    start = clock()
    lock = threading.Lock()
    requeued = study.requeue_interrupted()
    counts = {"completed": 0, "failed": 0, "asked": 0}
    done_before = study.completed()

    def next_trial() -> tuple[int, RunConfig] | None:
        with lock:
            if stop.is_set():
                return None
            if limits.max_runs is not None and done_before + counts["asked"] >= limits.max_runs:
                return None
            number, config = study.ask()
            if limits.budget_s is not None and clock() - start + plan.estimate_s(config.interval_ms / 1000) > limits.budget_s:
                return None  # no time left for it: it stays RUNNING in the study; a resume queues it again
            counts["asked"] += 1
            return number, config

    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        try:
            work(slot)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)
            stop.set()

    def work(slot: int) -> None:
        while (trial := next_trial()) is not None:
            number, config = trial
            events.run_started(slot, number, config)
            try:
                run = execute(plan, number, config, pool, stop=stop,
                                  on_phase=lambda phase: events.run_phase(slot, phase))
            except RunInterrupted:
                return  # the trial stays RUNNING in the study: a resumed profile runs it again
            with lock:
                store.save_run(run)
                value = boundary_distance(run, targets, plan.timeout_s) if run.status == "completed" else None
                study.tell(number, value)
                counts["completed" if run.status == "completed" else "failed"] += 1
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
    return ProfileOutcome(counts["completed"], counts["failed"], requeued, stop.is_set(), clock() - start)
