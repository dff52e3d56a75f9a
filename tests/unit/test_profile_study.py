"""The profiling study: a space-filling start, TPE near the QoS boundary after it, resumable."""

import math
from pathlib import Path

import pytest

from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.study import (
    ProfileSpace,
    ProfileStudy,
    QosTargets,
    boundary_distance,
    design_size,
    space_filling_design,
)

SPACE = ProfileSpace(interval_min_s=2, interval_max_s=60, load_scales=(1.0, 2.0), initial_design=4)


def storage(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'profile.db'}"


def test_the_design_spans_the_interval_range_and_every_load() -> None:
    design = space_filling_design(SPACE, 6, seed=1)
    intervals = sorted(c.interval_ms for c in design)
    assert all(2000 <= i <= 60_000 for i in intervals)
    assert intervals[0] < 5000 and intervals[-1] > 25_000, "one stratum of log-interval per point"
    assert {c.load_scale for c in design} == {1.0, 2.0}
    assert space_filling_design(SPACE, 6, seed=1) == design, "seeded"


def test_the_design_is_large_enough_for_a_model_every_load_and_a_round_of_parallel_runs() -> None:
    assert design_size(parallel=1, load_scales=3) == 4, "one run at a time still spreads four across the range"
    assert design_size(parallel=1, load_scales=5) == 5
    assert design_size(parallel=3, load_scales=3) == 6
    design = space_filling_design(ProfileSpace(2, 30, (0.64, 1.0, 1.36)), design_size(1, 3), seed=0)
    assert len({c.interval_ms for c in design}) == 4 and {c.load_scale for c in design} == {0.64, 1.0, 1.36}


def test_the_first_trials_are_the_design_in_order(tmp_path: Path) -> None:
    study = ProfileStudy(storage(tmp_path), "p", SPACE, seed=3)
    asked = [study.ask()[1] for _ in range(SPACE.initial_design)]
    assert asked == space_filling_design(SPACE, SPACE.initial_design, seed=3)


def test_a_resumed_study_reruns_the_interrupted_trials_first_and_keeps_the_completed(tmp_path: Path) -> None:
    first = ProfileStudy(storage(tmp_path), "p", SPACE, seed=3)
    done_number, _ = first.ask()
    first.tell(done_number, 0.5)
    _, interrupted = first.ask()  # the process dies with this run in flight

    resumed = ProfileStudy(storage(tmp_path), "p", SPACE, seed=3)
    assert resumed.completed() == 1
    assert resumed.requeue_interrupted() == 1
    rest_of_design = space_filling_design(SPACE, SPACE.initial_design, seed=3)[2:]
    asked = [resumed.ask()[1] for _ in range(3)]
    assert interrupted in asked and set(asked) == {interrupted, *rest_of_design}


def test_after_the_design_tpe_samples_near_the_qos_boundary(tmp_path: Path) -> None:
    """Synthetic job: recovery = 2 x interval; target 40 s puts the boundary at 20 s."""
    space = ProfileSpace(2, 60, (1.0,), initial_design=5)
    study = ProfileStudy(storage(tmp_path), "p", space, seed=7)
    later = []
    for i in range(30):
        number, config = study.ask()
        study.tell(number, abs(2 * config.interval_ms / 1000 / 40 - 1))
        if i >= 15:
            later.append(config.interval_ms / 1000)
    near = [s for s in later if 12 <= s <= 32]
    chance = math.log(32 / 12) / math.log(60 / 2)  # a draw uniform in log-interval lands there this often
    assert len(near) / len(later) > 1.5 * chance, later


def _run(recoveries: list[float | None], p99_ms: float | None) -> ProfileRun:
    fault = FaultRecord("kill-taskmanager", "pid 1", 0, 0.0)
    ms = tuple(RecoveryMeasurement(fault, 5000, "WorstCase", 1, 2, 3, r, None, None, None, None) for r in recoveries)
    steady = SteadyState(1000.0, None, None, p99_ms, None, None, None)
    return ProfileRun("r", "p", 0, RunConfig(5000, 1.0), 1000.0, "completed", 0, 1, steady, ms)


def test_boundary_distance_takes_the_worst_recovery_and_the_nearer_target() -> None:
    targets = QosTargets(max_recovery_s=40, max_p99_ms=2000)
    assert boundary_distance(_run([20.0, 40.0], None), targets, 300) == 0
    assert boundary_distance(_run([20.0], 1800.0), targets, 300) == pytest.approx(0.1)
    assert boundary_distance(_run([None], None), targets, 120) == pytest.approx(2.0), "not recovered = timeout"
    assert boundary_distance(_run([], None), targets, 120) is None


def test_recovery_settings_explored_are_a_dimension_of_the_design_and_of_what_tpe_asks(tmp_path: Path) -> None:
    space = ProfileSpace(2, 60, (1.0,), initial_design=4, recovery=("live", "proposed"))
    design = space_filling_design(space, 4, seed=1)
    assert sorted(c.recovery for c in design) == ["live", "live", "proposed", "proposed"], "each stratum once"
    study = ProfileStudy(storage(tmp_path), "p", space, seed=1)
    asked = []
    for _ in range(8):
        number, config = study.ask()
        study.tell(number, config.interval_ms / 60_000)
        asked.append(config)
    assert asked[:4] == design and {c.recovery for c in asked[4:]} <= {"live", "proposed"}
    assert all(c.recovery == "live" for c in space_filling_design(SPACE, 6, seed=1)), "not explored: live only"


def test_only_runs_at_the_live_recovery_settings_feed_the_tuners_recovery_model() -> None:
    from chronos.profiler.observations import profile_observations

    fault = FaultRecord("kill-taskmanager", "pid 1", 0, 0.0)

    def run(recovery: str, seconds: float, capacity: float) -> ProfileRun:
        m = RecoveryMeasurement(fault, 5000, "WorstCase", 1, 2, 3, seconds, None, 10, 10, 1, capacity=capacity)
        return ProfileRun(f"r-{recovery}", "p", 0, RunConfig(5000, 1.0, recovery), 1000.0, "completed", 0, 1,
                          SteadyState(1000.0, 50.0, 80.0, 100.0, 200.0, 1024.0, 40.0), (m,))

    observed = profile_observations([run("live", 30.0, 5000.0), run("proposed", 9.0, 9000.0)])
    assert [o.value for o in observed.recovery] == [30.0] and observed.capacity == 5000.0
    assert len(observed.latency) == len(observed.checkpoint) == 2, "heartbeats and spares do not change steady state"


def test_a_steady_window_measured_again_is_a_repeat_at_the_run_s_setting_for_the_latency_and_checkpoint_models() -> None:
    from chronos.optimizer.model_trust import repeat_noise_floor
    from chronos.profiler.observations import profile_observations

    again = SteadyState(1000.0, 50.0, 80.0, 125.0, 250.0, 1024.0, 40.0)
    run = ProfileRun("r", "p", 0, RunConfig(5000, 1.0), 1000.0, "completed", 0, 1,
                     SteadyState(1000.0, 50.0, 80.0, 100.0, 200.0, 1024.0, 40.0), repeat_steady=(again,))
    observed = profile_observations([run])
    assert [(o.interval_s, o.value) for o in observed.latency] == [(5.0, 100.0), (5.0, 125.0)]
    assert [o.value for o in observed.checkpoint] == [0.2, 0.25]
    assert repeat_noise_floor(observed.latency) == pytest.approx((25 / 100 + 25 / 125) / 2)
