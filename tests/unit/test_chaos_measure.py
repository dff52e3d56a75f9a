"""The measurement orchestration on a driven clock, a fake job and a fake fault."""

from chronos.chaos.measure import measure_recovery
from chronos.chaos.timing import BestCase, WorstCase
from chronos.model import SignalSample
from tests.support.chaos_world import World


def _measure(strategy):  # type: ignore[no-untyped-def]
    world = World()
    m = measure_recovery(world, world, strategy, warmup_s=20, sample_every_s=0.5, hold_s=15, timeout_s=120,
                         wall_ms=world.wall_ms, sleep=world.sleep)
    return m, world


def test_worst_case_measurement_has_ordered_phases_and_replays_most_of_an_interval() -> None:
    m, world = _measure(WorstCase(before_s=3))
    assert world.rolled_back == 1
    assert abs(m.fault.injected_wall_ms % 10_000 - 7_000) <= 50, "3 s before a checkpoint due every 10 s"
    assert m.fault.injected_wall_ms < m.detected_ms < m.running_ms <= m.recovered_ms  # type: ignore[operator]
    assert m.recovery_s is not None and 15 <= m.recovery_s <= 16
    assert m.records_reprocessed is not None and 6_900 <= m.records_reprocessed <= 7_100
    assert m.checkpoint_age_at_fault_ms is not None and 6_900 <= m.checkpoint_age_at_fault_ms <= 7_100
    assert m.peak_lag == 20_000 and m.restored_checkpoint_id == 7


def test_best_case_replays_less_than_worst_case() -> None:
    worst, _ = _measure(WorstCase(before_s=3))
    best, _ = _measure(BestCase(after_s=0.5))
    assert best.records_reprocessed is not None and worst.records_reprocessed is not None
    assert best.records_reprocessed < 1_000 < 6_000 < worst.records_reprocessed


class SlowWorld(World):
    """Each sample takes 3 s (a loaded machine): a 10 s warm-up holds only 4 of them."""

    def sample(self) -> SignalSample:
        self.now_ms += 3000
        return super().sample()


def test_a_slowly_sampled_warmup_goes_on_until_it_can_learn_the_steady_state() -> None:
    world = SlowWorld()
    start = world.now_ms
    m = measure_recovery(world, world, WorstCase(before_s=3), warmup_s=10, sample_every_s=0.5, hold_s=15,
                         timeout_s=120, wall_ms=world.wall_ms, sleep=world.sleep)
    assert m.fault.injected_wall_ms - start > 10_000, "the warm-up took longer than asked"
    assert m.recovery_s is not None


def test_a_warmup_that_never_sees_the_job_running_gives_up_after_three_times_its_length() -> None:
    class Down(World):
        def sample(self) -> SignalSample:
            return SignalSample(self.now_ms, False)

    world = Down()
    start = world.now_ms
    try:
        measure_recovery(world, world, WorstCase(before_s=3), warmup_s=10, wall_ms=world.wall_ms, sleep=world.sleep)
    except ValueError as exc:
        assert "pre-fault samples" in str(exc)
        assert 30_000 <= world.now_ms - start <= 31_000
    else:
        raise AssertionError("a steady state was learnt from a job that never ran")
    assert world.fault_ms is None, "no fault without a steady state to measure against"


def test_a_restart_too_quick_for_any_sample_is_dated_by_flinks_exception_history() -> None:
    """With a spare TaskManager a job is RUNNING again ~2 s after a kill, and the first sample after it can come
    later than that: no sample sees the job down, yet Flink recorded the failure. Without its moment the fault read
    "not recovered" and its run waited out the timeout (an exploring profile's copies at the proposal, measured)."""
    world = World(unseen_restart=True)
    m = measure_recovery(world, world, WorstCase(before_s=3), warmup_s=20, sample_every_s=0.5, hold_s=15,
                         timeout_s=120, wall_ms=world.wall_ms, sleep=world.sleep)
    assert m.detected_ms == m.fault.injected_wall_ms + 1000, "Flink's own moment of the failure"
    assert m.running_ms is not None and m.detected_ms < m.running_ms
    assert m.recovery_s is not None and 15 <= m.recovery_s <= 16


def test_a_fault_after_a_steady_window_learns_its_bands_from_it_and_needs_no_warm_up() -> None:
    """A profiling run has just measured the job's steady state at this interval and load: the fault fires at the
    next worst moment, not a warm-up later, and the recovery is judged against the window's bands."""
    world = World()
    window = []
    for _ in range(40):
        window.append(world.sample())
        world.sleep(0.5)
    start = world.now_ms
    m = measure_recovery(world, world, WorstCase(before_s=3), warmup_s=0, sample_every_s=0.5, hold_s=15,
                         timeout_s=120, wall_ms=world.wall_ms, sleep=world.sleep, learned_from=window)
    assert m.fault.injected_wall_ms - start <= 10_000, "within one interval of asking"
    assert m.recovery_s is not None and 15 <= m.recovery_s <= 16
