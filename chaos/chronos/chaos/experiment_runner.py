"""Running an experiment: its own load (if any), hypothesis before, method, hypothesis after,
rollbacks always, then the exactly-once check of that load; every step journaled. Faults, rollbacks
and the load are handed in, so the runner knows no process, cluster or topic."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from chronos.chaos.experiment import Action, Experiment, HypothesisResult, check_hypothesis
from chronos.chaos.faults import FaultInjector
from chronos.chaos.measure import SignalSource, measure_recovery
from chronos.clock import wall_ms
from chronos.model import DeliveryCheck, RecoveryMeasurement, SignalSample


class BoundedLoad(Protocol):
    """The experiment's own events: started before the hypothesis is first checked, finished (and
    checked for exactly-once) after the rollbacks, closed whatever happened."""

    def start(self) -> None: ...
    def finish(self, timeout_s: float) -> DeliveryCheck: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class JournalEvent:
    at_ms: int
    kind: str
    detail: str


@dataclass(frozen=True)
class ExperimentResult:
    title: str
    # "completed" | "deviated" (hypothesis failed after, or exactly-once did not hold) | "aborted"
    # (hypothesis failed before: nothing injected)
    status: str
    before: HypothesisResult
    after: HypothesisResult | None
    measurements: tuple[RecoveryMeasurement, ...]
    journal: tuple[JournalEvent, ...] = field(default=())
    delivery: DeliveryCheck | None = None  # None: the experiment had no bounded load of its own


def run_experiment(
    experiment: Experiment,
    signals: SignalSource,
    faults: Mapping[str, Callable[[Action], FaultInjector]],
    rollbacks: Mapping[str, Callable[[], None]],
    load: BoundedLoad | None = None,
    *,
    sample_every_s: float = 0.5,
    hold_s: float = 15.0,
    timeout_s: float = 300.0,
    wall_ms: Callable[[], int] = wall_ms,
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
    delivery: DeliveryCheck | None = None
    note("start", experiment.title)
    if load is not None and experiment.load is not None:
        load.start()
        note("load", f"{experiment.load.rate:g} events/s on {experiment.load.vehicles} keys of its own")
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
    except BaseException:
        if load is not None:
            load.close()
        raise
    finally:
        for name in experiment.rollbacks:
            try:
                rollbacks[name]()
                note("rollback", name)
            except Exception as exc:  # noqa: BLE001 - every rollback runs, whatever another one did
                note("rollback-failed", f"{name}: {exc}")
    if load is not None and experiment.load is not None:
        note("verify", "waiting for the committed output of the experiment's events")
        try:
            delivery = load.finish(experiment.load.verify_timeout_s)
        finally:
            load.close()
    if delivery is not None:
        note("exactly-once", delivery.summary())
        if not delivery.ok and status == "completed":
            status = "deviated"
    note("end", status)
    return ExperimentResult(experiment.title, status, before, after, tuple(measurements), tuple(journal), delivery)
