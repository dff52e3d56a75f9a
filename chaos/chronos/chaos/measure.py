"""Measuring the recovery from one fault: learn the steady state, fire at the strategy's moment,
sample until the job is back in its steady state (or the timeout), analyse. Talks to the job only
through the SignalSource Protocol, so the orchestration runs unchanged on a fake in unit tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from chronos.chaos.catch_up import explain_catch_up
from chronos.chaos.faults import FaultInjector
from chronos.chaos.recovery import analyse_recovery
from chronos.chaos.steady_state import learn_steady_state
from chronos.chaos.timing import FiringStrategy
from chronos.clock import wall_ms
from chronos.model import CheckpointHistory, RecoveryMeasurement, SignalSample


class SignalSource(Protocol):
    def sample(self) -> SignalSample: ...
    def checkpoint_history(self) -> CheckpointHistory: ...
    def replay_now(self) -> int | None: ...
    def restored_checkpoint_id(self) -> int | None: ...
    def failed_since(self, since_ms: int) -> int | None:
        """When Flink recorded the job's first failure at or after `since_ms` (its own clock), if it did."""
        ...


def measure_recovery(
    signals: SignalSource,
    fault: FaultInjector,
    strategy: FiringStrategy,
    *,
    warmup_s: float = 30.0,
    sample_every_s: float = 0.5,
    hold_s: float = 15.0,
    timeout_s: float = 300.0,
    wall_ms: Callable[[], int] = wall_ms,
    sleep: Callable[[float], None] = time.sleep,
    on_sample: Callable[[SignalSample], None] = lambda s: None,
    settings_in_force: tuple[tuple[str, str], ...] = (),
    learned_from: Sequence[SignalSample] = (),
) -> RecoveryMeasurement:
    """`learned_from`: readings of the steady state just before (a profiling run's steady window), so the warm-up
    can be shorter: the bands are learnt from them and what the warm-up adds."""
    before: list[SignalSample] = list(learned_from)
    interval_ms = signals.checkpoint_history().interval_ms
    start = wall_ms()
    while True:
        before.append(signals.sample())
        on_sample(before[-1])
        sleep(sample_every_s)
        if wall_ms() - start < warmup_s * 1000:
            continue
        # A loaded machine samples slowly: the warm-up goes on (up to 3x) until it has enough to learn from.
        try:
            steady = learn_steady_state(before, interval_ms=interval_ms)
            break
        except ValueError:
            if wall_ms() - start >= 3 * max(warmup_s, 10.0) * 1000:
                raise
    history = signals.checkpoint_history()
    fire_at = strategy.fire_at_ms(history, wall_ms())
    while wall_ms() < fire_at - 100:
        sleep(min(sample_every_s, (fire_at - wall_ms()) / 1000))
    while wall_ms() < fire_at:
        pass  # the last 100 ms: a busy wait keeps the fault within a few ms of the chosen moment
    replay = signals.replay_now()
    history = signals.checkpoint_history()
    record = fault.inject()
    after: list[SignalSample] = []
    # Flink's own moment of the failure, as a "down" reading: a restart onto a spare TaskManager is over in about
    # 2 s, and on a loaded host the first sample after a kill came 7-12 s after it (an exploring profile's copies
    # at the proposal recovered, restored and ran on, yet no sample ever saw them down: "not recovered").
    failed: list[SignalSample] = []
    try:
        phases = analyse_recovery(record.injected_wall_ms, after, steady, int(hold_s * 1000), int(timeout_s * 1000))
        while wall_ms() - record.injected_wall_ms < timeout_s * 1000:
            after.append(signals.sample())
            on_sample(after[-1])
            if not failed and (failed_ms := signals.failed_since(record.injected_wall_ms)) is not None:
                failed.append(SignalSample(failed_ms, False))
            phases = analyse_recovery(record.injected_wall_ms, [*failed, *after], steady, int(hold_s * 1000),
                                      int(timeout_s * 1000))
            if phases.recovered:
                break
            sleep(sample_every_s)
    finally:
        fault.rollback()
    last = history.completed[-1] if history.completed else None
    catch_up = explain_catch_up(after, phases.running_ms, phases.recovered_ms)
    return RecoveryMeasurement(
        fault=record,
        interval_ms=history.interval_ms,
        strategy=type(strategy).__name__,
        detected_ms=phases.detected_ms,
        running_ms=phases.running_ms,
        recovered_ms=phases.recovered_ms,
        recovery_s=phases.recovery_s,
        peak_lag=phases.peak_lag,
        records_reprocessed=replay,
        checkpoint_age_at_fault_ms=record.injected_wall_ms - last.trigger_ms if last else None,
        restored_checkpoint_id=signals.restored_checkpoint_id(),
        backlog_at_restart=catch_up.backlog,
        catch_up_input_rate=catch_up.input_rate,
        capacity=catch_up.capacity,
        drain_rate=catch_up.drain_rate,
        settings_in_force=settings_in_force,
    )
