"""Running an experiment: hypothesis before, method, hypothesis after, rollbacks always; every step
journaled. Faults and rollbacks are handed in by name, so the runner knows no process or cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from chronos.chaos.experiment import Action, Experiment, HypothesisResult, check_hypothesis
from chronos.chaos.faults import FaultInjector
from chronos.chaos.measure import SignalSource, measure_recovery
from chronos.model import RecoveryMeasurement, SignalSample


@dataclass(frozen=True)
class JournalEvent:
    at_ms: int
    kind: str
    detail: str


@dataclass(frozen=True)
class ExperimentResult:
    title: str
    status: str  # "completed" | "deviated" (hypothesis failed after) | "aborted" (failed before)
    before: HypothesisResult
    after: HypothesisResult | None
    measurements: tuple[RecoveryMeasurement, ...]
    journal: tuple[JournalEvent, ...] = field(default=())


def run_experiment(
    experiment: Experiment,
    signals: SignalSource,
    faults: Mapping[str, Callable[[Action], FaultInjector]],
    rollbacks: Mapping[str, Callable[[], None]],
    *,
    sample_every_s: float = 0.5,
    hold_s: float = 15.0,
    timeout_s: float = 300.0,
    wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    sleep: Callable[[float], None] = time.sleep,
    on_event: Callable[[JournalEvent], None] = lambda e: None,
) -> ExperimentResult:
    journal: list[JournalEvent] = []

    def note(kind: str, detail: str) -> None:
        journal.append(JournalEvent(wall_ms(), kind, detail))
        on_event(journal[-1])

    def window() -> list[SignalSample]:
        samples, start = [], wall_ms()
        while wall_ms() - start < experiment.steady_state_hypothesis.window_s * 1000:
            samples.append(signals.sample())
            sleep(sample_every_s)
        return samples

    measurements: list[RecoveryMeasurement] = []
    after: HypothesisResult | None = None
    note("start", experiment.title)
    try:
        before = check_hypothesis(experiment.steady_state_hypothesis, window())
        for probe in before.probes:
            note("probe-before", f"{probe.name}: {probe.detail}")
        if not before.ok:
            note("abort", "the steady-state hypothesis does not hold before the method: nothing injected")
            status = "aborted"
        else:
            for index, action in enumerate(experiment.method):
                note("inject", f"{action.fault} ({action.when.strategy})")
                m = measure_recovery(signals, faults[action.fault](action), action.when.strategy_object(index),
                                     warmup_s=experiment.steady_state_hypothesis.window_s, sample_every_s=sample_every_s,
                                     hold_s=hold_s, timeout_s=timeout_s, wall_ms=wall_ms, sleep=sleep)
                measurements.append(m)
                note("recovery", f"{action.fault}: " + (f"recovered in {m.recovery_s:.1f} s" if m.recovery_s is not None
                                                        else f"NOT recovered within {timeout_s:g} s"))
                if action.pause_after_s:
                    sleep(action.pause_after_s)
            after = check_hypothesis(experiment.steady_state_hypothesis, window())
            for probe in after.probes:
                note("probe-after", f"{probe.name}: {probe.detail}")
            status = "completed" if after.ok else "deviated"
    finally:
        for name in experiment.rollbacks:
            try:
                rollbacks[name]()
                note("rollback", name)
            except Exception as exc:  # noqa: BLE001 - every rollback runs, whatever another one did
                note("rollback-failed", f"{name}: {exc}")
    note("end", status)
    return ExperimentResult(experiment.title, status, before, after, tuple(measurements), tuple(journal))
