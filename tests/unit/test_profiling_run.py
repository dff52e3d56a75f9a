"""One profiling run on a fake cluster (fakes of the run's own ports: no Flink, no Kafka): its phases come
in order; whatever ends it (a refused job, a cluster that will not start, an error in any phase, a stop
request) the load is stopped, the copy's cluster released and its topics deleted; and a job whose copy
could not get topics of its own is refused before any cluster starts."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from chronos.model import CheckpointSettings, JobSpec
from chronos.profiler.copies import JobCopy
from chronos.profiler.input_sample import InputSample
from chronos.profiler.records import RecoveryVariant, RunConfig
from chronos.profiler.run import CopySlot, OutputOlderThanCopy, RunInterrupted, RunPlan, execute_run
from chronos.rates import RateProfile, TraceRate
from tests.support.chaos_world import World

SHOP = Path(__file__).parents[2] / "jobs" / "shop_payments.yaml"
SPEC = JobSpec("fleet", "/jobs/fleet.py", ("--input-topic", "in", "--output-topic", "out"))
PLAN = RunPlan("p1", SPEC, TraceRate((0.0,), (1000.0,)), faults=1, steady_s=5, warmup_s=5, hold_s=3, timeout_s=60)


class Boom(Exception):
    pass


@dataclass
class Log:
    events: list[str] = field(default_factory=list)
    fail_at: str | None = None  # the event that raises
    stop_at: str | None = None  # the event at which a stop is requested
    stop: threading.Event = field(default_factory=threading.Event)
    windows_s: list[float] = field(default_factory=list)  # the steady windows latencies were asked for
    latencies_ms: tuple[float, ...] = (3000.0, 3100.0)  # what the copy's output reads in its steady window

    def __call__(self, event: str) -> None:
        self.events.append(event)
        if self.stop_at == event:
            self.stop.set()
        if self.fail_at == event:
            raise Boom(event)


class Load:
    def __init__(self, log: Log) -> None:
        self.log = log

    def stop(self) -> None:
        self.log("load stopped")


class Control:
    def __init__(self, log: Log, world: World) -> None:
        self.log, self.world = log, world

    def submit(self, spec: JobSpec, settings: CheckpointSettings) -> str:
        self.log(f"submit {spec.name} at {settings.interval_ms} ms")
        return "j1"

    def wait_until_running(self, job_id: str, timeout_s: float) -> None:
        self.log("running")

    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int) -> None:
        self.log(f"pace at {cadence_ms} ms")
        self.world.interval_ms = cadence_ms

    def cancel(self, job_id: str) -> None:
        self.log("cancel")

    def close(self) -> None:
        self.log("control closed")


class Signals(World):
    def __init__(self, log: Log, world: World) -> None:
        self.log, self.world = log, world

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.world, name)

    def sample(self):  # type: ignore[no-untyped-def]
        return self.world.sample()

    def checkpoint_history(self):  # type: ignore[no-untyped-def]
        return self.world.checkpoint_history()

    def latencies_between(self, since_ms: int, until_ms: int) -> list[float]:
        self.log.windows_s.append((until_ms - since_ms) / 1000)
        return list(self.log.latencies_ms)

    def close(self) -> None:
        self.log("signals closed")


class Cluster:
    bootstrap = "127.0.0.1:9092"

    def __init__(self, log: Log, world: World) -> None:
        self.log, self.world = log, world
        self.released = False

    def fault(self) -> World:
        self.log("fault")
        return self.world

    def recovery_settings(self) -> tuple[tuple[str, str], ...]:
        return (("heartbeat.timeout", "10s"),)

    def taskmanager_cpu_seconds(self) -> float | None:
        return 1.0

    def control(self) -> Control:
        return Control(self.log, self.world)

    def signals(self, job_id: str, copy: JobCopy, timestamp_field: str = "max_created_ms") -> Signals:
        self.log("signals" if timestamp_field == "max_created_ms" else f"signals by {timestamp_field}")
        return Signals(self.log, self.world)

    def create_topics(self, topics: list[str], partitions: int) -> None:
        self.log("topics created")

    def delete_topics(self, topics: list[str]) -> None:
        self.log("topics deleted")  # on the shared broker: still reachable after the cluster is released

    def start_load(self, topic: str, rate: RateProfile, vehicles: int, run_id: str, workers: int) -> Load:
        self.log(f"load {rate.rate_at(0):.0f}/s")
        return Load(self.log)

    def start_replay(self, sample: InputSample, topics: tuple[tuple[str, str], ...], rate: RateProfile,
                     event_time_fields: tuple[str, ...], workers: int) -> Load:
        self.log(f"replay {len(sample.records)} records at {rate.rate_at(0):.0f}/s into "
                 + ", ".join(f"{copy} for {live}" for live, copy in topics) + f" moving {', '.join(event_time_fields)}")
        return Load(self.log)


@dataclass
class Pool:
    log: Log
    world: World = field(default_factory=World)
    refuse: bool = False

    def acquire(self, run_id: str, recovery: RecoveryVariant | None = None) -> Cluster:
        self.log("acquire" if recovery is None else f"acquire at {recovery.name}: {dict(recovery.flink_settings)}, "
                 f"{recovery.spare_taskmanagers} spare")
        if self.refuse:
            raise Boom("no slots")
        return Cluster(self.log, self.world)

    def release(self, cluster: object) -> None:
        self.log("release")
        assert isinstance(cluster, Cluster)
        cluster.released = True


DEFAULT_CONFIG = RunConfig(10_000, 2.0)


def run(log: Log, plan: RunPlan = PLAN, pool: Pool | None = None,  # type: ignore[no-untyped-def]
        config: RunConfig = DEFAULT_CONFIG, trial: int = 1):
    pool = pool or Pool(log)
    world = pool.world
    return execute_run(plan, trial, config, pool, stop=log.stop, on_phase=lambda p: log(f"phase {p.split(' (')[0]}"),
                       wall_ms=world.wall_ms, clock=lambda: world.now_ms / 1000, sleep=world.sleep)


CLEANUP = ["phase cleaning up", "signals closed", "load stopped", "control closed", "release", "topics deleted"]


def test_a_run_goes_through_its_phases_in_order_and_leaves_nothing() -> None:
    log = Log()
    result = run(log)
    assert result.status == "completed" and result.load_rate == 2000 and len(result.recoveries) == 1
    assert result.steady is not None and result.steady.p99_ms == pytest.approx(3099, abs=1)
    assert log.events == [
        "phase starting a cluster", "acquire", "topics created", "load 2000/s", "phase submitting",
        "submit fleet-profile-" + result.run_id + " at 3600000 ms", "running", "signals", "phase pacing at 10 s",
        "pace at 10000 ms", "phase waiting for two checkpoints", "phase steady state", "phase fault 1/1", "fault",
        "phase cleaning up", "signals closed", "cancel", *CLEANUP[2:]]


def test_a_job_with_a_recorded_sample_has_it_replayed_into_every_input_topic_of_its_copy() -> None:
    from chronos.jobs.job_file import load_job_file
    from chronos.profiler.input_sample import InputRecord, InputSample

    spec, _ = load_job_file(SHOP, {"bootstrap": "b:9092"})
    sample = InputSample((InputRecord("shop-orders", 0, 0, b"c1", b"{}", (), 1),), 1, 10.0, TraceRate((0.0,), (500.0,)))
    log = Log()
    result = run(log, RunPlan("p1", spec, sample.trace, sample=sample, timestamp_field="paid_ms", steady_s=5,
                              warmup_s=5, hold_s=3, timeout_s=60))
    assert result.status == "completed", result.error
    run_id = result.run_id
    assert f"replay 1 records at 1000/s into shop-orders-profile-{run_id} for shop-orders, shop-payments-profile-" \
           f"{run_id} for shop-payments moving $.placed_at, $.payment.at_ms" in log.events
    assert not any(e.startswith("load ") and e.endswith("/s") for e in log.events), "no generated events"
    assert "signals by paid_ms" in log.events, "the copy's latency is read off the job's own output field"


@pytest.mark.parametrize("fail_at", ["topics created", "load 2000/s", "running", "signals", "phase steady state",
                                     "fault"])
def test_an_error_in_any_phase_is_a_failed_run_that_cleans_up_after_itself(fail_at: str) -> None:
    log = Log(fail_at=fail_at)
    result = run(log)
    assert result.status == "failed" and "Boom" in (result.error or "")
    started = log.events.index(f"{fail_at}")
    submitted = any(e.startswith("submit ") for e in log.events)
    expected = [e for e in [*CLEANUP[:2], "cancel", *CLEANUP[2:]]
                if (e != "load stopped" or "load 2000/s" in log.events[:started])
                and (e != "control closed" or "phase submitting" in log.events)
                and (e != "signals closed" or "signals" in log.events[:started])
                and (e != "cancel" or submitted)]
    assert log.events[-len(expected):] == expected, "stopped what it started, released the cluster, deleted the topics"


@pytest.mark.parametrize("stop_at", ["acquire", "topics created", "running", "phase steady state", "phase fault 1/1"])
def test_a_stop_request_is_honoured_at_each_phase_and_cleans_up(stop_at: str) -> None:
    log = Log(stop_at=stop_at)
    with pytest.raises(RunInterrupted):
        run(log)
    assert ("release" in log.events and "load stopped" in log.events) or stop_at == "acquire"
    assert log.events[-1] == "topics deleted" and "cancel" not in log.events


def test_a_cluster_that_will_not_start_is_a_failed_run() -> None:
    log = Log()
    result = run(log, pool=Pool(log, refuse=True))
    assert result.status == "failed" and "cluster: no slots" in (result.error or "")
    assert "release" not in log.events and "load stopped" not in log.events


def test_a_job_its_copy_cannot_get_topics_for_is_refused_before_any_cluster_starts() -> None:
    from chronos.errors import InvalidInput

    log = Log()
    plan = RunPlan("p1", JobSpec("fleet", "/jobs/fleet.py", ("--topic", "in")), TraceRate((0.0,), (1000.0,)))
    with pytest.raises(InvalidInput, match="does not take --input-topic and --output-topic"):
        run(log, plan)
    assert log.events == []


def test_a_run_at_explored_recovery_settings_gets_a_cluster_started_with_them() -> None:
    from dataclasses import replace

    fast = RecoveryVariant("proposed", (("heartbeat.timeout", "5000 ms"),), 1)
    log = Log()
    result = run(log, replace(PLAN, recovery_variants=(fast,)), config=RunConfig(10_000, 2.0, "proposed"))
    assert result.status == "completed" and result.config.recovery == "proposed"
    assert "acquire at proposed: {'heartbeat.timeout': '5000 ms'}, 1 spare" in log.events
    unknown = run(Log(), replace(PLAN, recovery_variants=(fast,)), config=RunConfig(10_000, 2.0, "other"))
    assert unknown.status == "failed" and "'other' are not among the profile's (proposed)" in unknown.error


def test_the_steady_window_outlasts_an_interval_so_an_exactly_once_job_shows_output_in_it() -> None:
    log = Log()
    run(log, config=RunConfig(30_000, 1.0))
    assert log.windows_s and log.windows_s[0] >= 30 * 1.2, log.windows_s
    assert PLAN.estimate_s(30) >= 40 + 36 + 60


def test_the_profile_s_first_trial_carries_the_repeats_the_others_do_not() -> None:
    """One setting measured 1 + repeats times: the scatter the models' held-out error is read against."""
    plan = replace(PLAN, repeats=2)
    assert (plan.faults_in(0), plan.faults_in(1), replace(plan, faults=0).faults_in(0)) == (3, 1, 0)
    assert plan.estimate_s(10, 0) > plan.estimate_s(10, 1) == plan.estimate_s(10)
    log = Log()
    first = run(log, plan, trial=0)
    assert first.status == "completed" and len(first.recoveries) == 3, first.error
    assert [e for e in log.events if e.startswith("phase fault")] == ["phase fault 1/3", "phase fault 2/3",
                                                                      "phase fault 3/3"]


def test_the_run_that_repeats_its_faults_measures_its_steady_window_again_after_them_past_a_checkpoint() -> None:
    """A p99 is one point per run: the window again is what gives the latency model a repeat at one setting."""
    plan = replace(PLAN, repeats=1)
    assert (plan.repeat_windows(0), plan.repeat_windows(1), replace(plan, faults=0).repeat_windows(0)) == (1, 0, 0)
    assert plan.estimate_s(10, 0) >= replace(plan, repeats=0).estimate_s(10, 0) + 60 + 10 + plan.steady_window_s(10)
    log = Log()
    first = run(log, plan, trial=0)
    assert first.status == "completed" and len(first.repeat_steady) == 1, first.error
    assert first.repeat_steady[0].p99_ms == pytest.approx(3099, abs=1)
    phases = [e for e in log.events if e.startswith("phase")]
    assert phases[phases.index("phase fault 2/2") + 1] == "phase steady state again 1/1"
    assert len(log.windows_s) == 2 and log.windows_s[1] >= plan.steady_window_s(10)
    later = run(Log(), plan, trial=1)
    assert later.repeat_steady == ()


def test_a_copy_whose_output_is_older_than_the_copy_ends_the_profile_naming_the_time_fields_and_cleans_up() -> None:
    """Its latency was read off input times the replay did not move: every run would measure the recording's age."""
    log = Log(latencies_ms=(900_000.0, 910_000.0))
    with pytest.raises(OutputOlderThanCopy, match=r"median max_created_ms is 905 s old .* copy.event-time-fields: "
                                                  r"none\); name them there"):
        run(log)
    assert log.events[-len(CLEANUP):] == CLEANUP
    assert run(Log(latencies_ms=(30_000.0,))).status == "completed", "a slow job, not a stale one"


def in_slot(log: Log, pool: Pool, slot: CopySlot, config: RunConfig, trial: int = 1):  # type: ignore[no-untyped-def]
    world = pool.world
    return execute_run(PLAN, trial, config, pool, stop=log.stop, on_phase=lambda p: log(f"phase {p.split(' (')[0]}"),
                       wall_ms=world.wall_ms, clock=lambda: world.now_ms / 1000, sleep=world.sleep, slot=slot)


def test_a_slot_s_next_run_at_the_same_load_paces_the_running_copy_at_its_own_interval() -> None:
    """One cluster, one submission: the second run only changes the cadence, and each run's recoveries are recorded
    at the interval it paced, which is also where its worst moment to fail lies."""
    log = Log()
    pool = Pool(log)
    slot = CopySlot(pool)
    first = in_slot(log, pool, slot, RunConfig(10_000, 2.0))
    second = in_slot(log, pool, slot, RunConfig(4_000, 2.0), trial=2)
    assert (first.status, second.status) == ("completed", "completed"), (first.error, second.error)
    assert log.events.count("acquire") == 1 and sum(e.startswith("submit ") for e in log.events) == 1
    assert [e for e in log.events if e.startswith("pace at")] == ["pace at 10000 ms", "pace at 4000 ms"]
    assert [e for e in log.events if e.startswith("phase waiting")] == [
        "phase waiting for two checkpoints", "phase waiting for a checkpoint"], "a running copy is at its new cadence"
    assert [m.interval_ms for m in (*first.recoveries, *second.recoveries)] == [10_000, 4_000]
    worst = second.recoveries[0].fault
    assert 0 < 4_000 - worst.injected_wall_ms % 4_000 <= PLAN.before_s * 1000 + 100, "just before a paced checkpoint"
    assert "release" not in log.events and slot.running is not None, "kept for the slot's next run"
    slot.close()
    assert log.events[-len(CLEANUP):] == [CLEANUP[1], "cancel", *CLEANUP[2:]] and slot.running is None


def test_a_run_at_another_load_or_recovery_setting_stops_the_slot_s_copy_and_starts_its_own() -> None:
    log = Log()
    pool = Pool(log)
    slot = CopySlot(pool)
    in_slot(log, pool, slot, RunConfig(10_000, 2.0))
    other = in_slot(log, pool, slot, RunConfig(10_000, 1.0), trial=2)
    assert other.status == "completed" and other.load_rate == 1000
    assert log.events.count("acquire") == 2 and log.events.count("release") == 1
    assert log.events.index("release") < len(log.events) - log.events[::-1].index("acquire") - 1, \
        "the old copy is gone before the new cluster starts"
    slot.close()


def test_a_failed_run_in_a_slot_stops_its_copy_and_leaves_the_slot_empty() -> None:
    log = Log()
    pool = Pool(log)
    slot = CopySlot(pool)
    in_slot(log, pool, slot, RunConfig(10_000, 2.0))
    log.fail_at = "fault"
    failed = in_slot(log, pool, slot, RunConfig(5_000, 2.0), trial=2)
    assert failed.status == "failed" and slot.running is None
    assert log.events[-len(CLEANUP) - 1:] == [*CLEANUP[:2], "cancel", *CLEANUP[2:]]


def test_a_profile_s_workers_keep_their_copies_between_runs_and_stop_them_when_it_ends(tmp_path: Path) -> None:
    import functools

    from chronos.profiler.profile import ProfileLimits, run_profile
    from chronos.profiler.store import ProfileStore
    from chronos.profiler.study import ProfileSpace, ProfileStudy, QosTargets

    store = ProfileStore(tmp_path / "p.db")
    store.create_profile("p1", "fleet", 0, "{}")
    study = ProfileStudy(f"sqlite:///{tmp_path / 'p.db'}", "p1", ProfileSpace(2, 20, (1.0,), 3), seed=1)
    log = Log()
    pool = Pool(log)
    world = pool.world
    execute = functools.partial(execute_run, wall_ms=world.wall_ms, clock=lambda: world.now_ms / 1000,
                                sleep=world.sleep)
    outcome = run_profile(PLAN, study, store, pool, ProfileLimits(parallel=1, max_runs=3), QosTargets(60, 5000),
                          stop=threading.Event(), execute=execute)
    assert (outcome.completed, outcome.copies) == (3, 1), "the outcome says one copy served the three runs"
    assert log.events.count("acquire") == 1 and log.events.count("pace at") == 0
    assert sum(e.startswith("pace at") for e in log.events) == 3
    assert log.events[-len(CLEANUP):] == [CLEANUP[1], "cancel", *CLEANUP[2:]] and log.events.count("release") == 1
    fresh = Log()
    each = run_profile(replace(PLAN, reuse_copies=False), study, store, Pool(fresh), ProfileLimits(parallel=1, max_runs=5),
                QosTargets(60, 5000), stop=threading.Event(),
                execute=functools.partial(execute_run, wall_ms=world.wall_ms, clock=lambda: world.now_ms / 1000,
                                          sleep=world.sleep))
    assert fresh.events.count("acquire") == fresh.events.count("release") == 2, "a copy per run when told so"
    assert each.copies == 2
