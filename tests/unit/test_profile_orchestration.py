"""The profile loop on fake runs: counts, budget, stop and resume, stored and told."""

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chronos.errors import InvalidInput
from chronos.model import FaultRecord, JobSpec, RecoveryMeasurement
from chronos.profiler.events import ProfileEvents
from chronos.profiler.live_watch import GuardVerdict
from chronos.profiler.profile import MAX_PAUSE_S, STOP_ALLOWANCE_S, ProfileLimits, check_budget, run_profile
from chronos.profiler.records import ProfileRun, RunConfig
from chronos.profiler.run import RunInterrupted, RunPlan
from chronos.profiler.store import ProfileStore
from chronos.profiler.study import ProfileSpace, ProfileStudy, QosTargets
from chronos.rates import TraceRate

PLAN = RunPlan("p1", JobSpec("j", "j.py", ("--input-topic", "i", "--output-topic", "o")), TraceRate((0.0,), (1000.0,)))
TARGETS = QosTargets(max_recovery_s=40, max_p99_ms=2000)


def fake_run(plan: RunPlan, number: int, config: RunConfig, pool: Any, **_: Any) -> ProfileRun:
    fault = FaultRecord("kill-taskmanager", "pid 1", 0, 0.0)
    m = RecoveryMeasurement(fault, config.interval_ms, "WorstCase", 1, 2, 3, config.interval_ms / 500, None, 10, 10, 1)
    return ProfileRun(f"r{number}", plan.profile_id, number, config, 1000.0, "completed", 0, 1, recoveries=(m,))


def setup(tmp_path: Path) -> tuple[ProfileStudy, ProfileStore]:
    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "j", 0, "{}")
    return ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(2, 60, (1.0,), 3), seed=1), store


def test_runs_until_the_count_storing_and_telling_each(tmp_path: Path) -> None:
    study, store = setup(tmp_path)
    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=2, max_runs=5), TARGETS,
                          stop=threading.Event(), execute=fake_run)
    assert (outcome.completed, outcome.failed, outcome.interrupted) == (5, 0, False)
    assert len(store.runs("p1")) == 5 and study.completed() == 5


def test_a_resumed_profile_counts_what_is_done_and_reruns_the_interrupted(tmp_path: Path) -> None:
    study, store = setup(tmp_path)
    stop = threading.Event()
    calls = []

    def interrupted_after_two(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        calls.append(config)
        if len(calls) > 2:
            stop.set()
            raise RunInterrupted("stopping")
        return fake_run(plan, number, config, pool, **kw)

    first = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, max_runs=4), TARGETS, stop=stop,
                        execute=interrupted_after_two)
    assert (first.completed, first.interrupted) == (2, True)
    resumed_study = ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(2, 60, (1.0,), 3), seed=1)
    seen: list[RunConfig] = []

    def recording(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        seen.append(config)
        return fake_run(plan, number, config, pool, **kw)

    second = run_profile(PLAN, resumed_study, store, object(), ProfileLimits(parallel=1, max_runs=4), TARGETS,
                         stop=threading.Event(), execute=recording)
    assert second.requeued == 1 and second.completed == 2, "4 in all: 2 before, 2 now"
    assert seen[0] == calls[2], "the interrupted trial runs again (no design point was left waiting)"
    assert len(store.runs("p1")) == 4


def test_no_run_starts_that_the_budget_cannot_hold(tmp_path: Path) -> None:
    study, store = setup(tmp_path)
    now = [0.0]
    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, budget_s=10.0), TARGETS,
                          stop=threading.Event(), execute=fake_run, clock=lambda: now[0])
    assert outcome.completed == 0
    with pytest.raises(InvalidInput, match="too small for one profiling run"):
        check_budget(PLAN, ProfileLimits(budget_s=10.0), smallest_interval_s=2)


def test_no_run_starts_while_the_live_job_is_out_of_its_band_and_the_wait_is_reported(tmp_path: Path) -> None:
    study, store = setup(tmp_path)
    verdicts = iter([GuardVerdict(True, "in band"), GuardVerdict(False, "p99 above its band"),
                     GuardVerdict(False, "p99 above its band"), *[GuardVerdict(True, "in band")] * 10])
    now = [0.0]
    started: list[float] = []

    def guard() -> GuardVerdict:
        now[0] += 5
        return next(verdicts)

    def timed(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        started.append(now[0])
        return fake_run(plan, number, config, pool, **kw)

    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, max_runs=3), TARGETS,
                          stop=threading.Event(), execute=timed, clock=lambda: now[0], guard=guard, recheck_s=0.001)
    assert outcome.completed == 3
    assert (outcome.pauses, outcome.paused_s) == (1, 10.0), "the second run waited two rechecks for the live job"
    assert started == [5.0, 20.0, 25.0]


def test_a_live_job_that_never_comes_back_into_its_band_holds_each_run_at_most_max_pause(tmp_path: Path) -> None:
    study, store = setup(tmp_path)
    now = [0.0]

    def never_in_band() -> GuardVerdict:
        now[0] += 30
        return GuardVerdict(False, "lag above its band")

    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, max_runs=2), TARGETS,
                          stop=threading.Event(), execute=fake_run, clock=lambda: now[0], guard=never_in_band,
                          recheck_s=0.001)
    assert outcome.completed == 2 and outcome.pauses == 2
    assert outcome.paused_s == 2 * MAX_PAUSE_S, "each run waited MAX_PAUSE_S, then ran"


def test_the_budget_learns_how_long_this_profile_s_runs_take_and_is_never_overrun(tmp_path: Path) -> None:
    """Runs that take 0.6 of their a-priori estimate: judged by the estimate alone 4 fit in 3.1 estimates, judged by
    what the runs took 5 do, and the last still ends within the budget."""
    from chronos.profiler.profile import pace_factor

    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "j", 0, "{}")
    study = ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(10, 10, (1.0,), 3), seed=1)
    estimate = PLAN.estimate_s(10)
    now = [0.0]

    def quick(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        took = 0.6 * estimate
        now[0] += took
        return replace(fake_run(plan, number, config, pool, **kw), started_ms=0, ended_ms=int(took * 1000))

    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, budget_s=3.1 * estimate), TARGETS,
                          stop=threading.Event(), execute=quick, clock=lambda: now[0])
    assert outcome.completed == 5 and now[0] <= 3.1 * estimate
    assert pace_factor([]) == 1.0 and pace_factor([(10, 100)]) == 0.5 and pace_factor([(300, 100)]) == 1.5
    assert pace_factor([(60, 100), (80, 100), (70, 100)]) == 0.8, "the slowest run so far, not the typical one"


def test_the_budget_s_last_minutes_measure_a_steady_window_when_a_run_with_faults_no_longer_fits(
        tmp_path: Path) -> None:
    """The latency model's point costs a window; the recovery's a fault on top. When only the first still fits, the
    run is made without faults (and said so) rather than not at all."""
    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "j", 0, "{}")
    study = ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(10, 10, (1.0,), 3), seed=1)
    full, quiet = PLAN.estimate_s(10), replace(PLAN, faults=0).estimate_s(10)
    now = [0.0]
    plans: list[RunPlan] = []
    phases: list[str] = []

    def exact(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        plans.append(plan)
        took = plan.estimate_s(10)
        now[0] += took
        return replace(fake_run(plan, number, config, pool, **kw), started_ms=0, ended_ms=int(took * 1000))

    class Events(ProfileEvents):
        def run_phase(self, slot: int, phase: str) -> None:
            phases.append(phase)

    budget = 2 * full + quiet + STOP_ALLOWANCE_S + 1  # the last copy's stop is kept out of the budget
    run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, budget_s=budget), TARGETS,
                stop=threading.Event(), execute=exact, clock=lambda: now[0], events=Events())
    assert [p.faults for p in plans] == [1, 1, 0]
    assert phases == ["its faults no longer fit the budget: its steady window only"]


def test_an_asked_interval_the_budget_no_longer_fits_is_run_at_the_longest_shorter_one_that_does(
        tmp_path: Path) -> None:
    """A shop profile ended at 8.6 of 10 minutes with three runs and no latency model: the fourth design point, at a
    long interval, did not fit what was left, though a shorter one would have. The shorter one runs instead, told
    to the study as a trial of its own; the asked one stays under way, for a resumed profile to run."""
    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "j", 0, "{}")
    study = ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(2, 60, (1.0,), 0), seed=1)
    study.study.enqueue_trial({"interval_s": 60, "load_scale": 1.0})
    quiet = replace(PLAN, faults=0, repeats=0)
    budget = quiet.estimate_s(20) + STOP_ALLOWANCE_S + 0.5
    assert quiet.estimate_s(21) + STOP_ALLOWANCE_S > budget and PLAN.estimate_s(2, 1) + STOP_ALLOWANCE_S > budget
    plans: list[tuple[RunPlan, RunConfig]] = []
    phases: list[str] = []

    def recorded(plan: RunPlan, number: int, config: RunConfig, pool: Any, **kw: Any) -> ProfileRun:
        plans.append((plan, config))
        return fake_run(plan, number, config, pool, **kw)

    class Events(ProfileEvents):
        def run_phase(self, slot: int, phase: str) -> None:
            phases.append(phase)

    outcome = run_profile(PLAN, study, store, object(), ProfileLimits(parallel=1, max_runs=1, budget_s=budget),
                          TARGETS, stop=threading.Event(), execute=recorded, clock=lambda: 0.0, events=Events())
    assert outcome.completed == 1
    assert [(p.faults, c.interval_ms) for p, c in plans] == [(0, 20_000)]
    assert phases == ["the asked 60 s interval no longer fits the budget: 20 s, its steady window only"]
    trials = study.study.get_trials(deepcopy=False)
    assert [(t.state.name, t.params["interval_s"]) for t in trials] == [("RUNNING", 60), ("COMPLETE", 20)]
    assert trials[1].user_attrs == {"substitutes_trial": 0}
    assert [r.config.interval_ms for r in store.runs("p1")] == [20_000]


def test_a_run_with_its_faults_at_a_shorter_interval_is_preferred_to_a_window_alone_at_one() -> None:
    from chronos.profiler.budget_fit import fit_to_budget

    full_at_10 = PLAN.estimate_s(10, 1)
    fitted = fit_to_budget(PLAN, 60, 1, left_s=full_at_10, factor=1.0, copy_running=False, interval_min_s=2)
    assert fitted is not None and (fitted.interval_s, fitted.plan.faults) == (10, PLAN.faults)
    assert fit_to_budget(PLAN, 60, 1, left_s=1.0, factor=1.0, copy_running=False, interval_min_s=2) is None
    as_asked = fit_to_budget(PLAN, 60, 1, left_s=None, factor=1.0, copy_running=False, interval_min_s=2)
    assert as_asked is not None and (as_asked.interval_s, as_asked.why) == (60, "")
