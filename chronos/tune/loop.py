"""collect -> evaluate -> decide -> realize -> verify, for one live job.

Collection runs every few seconds (QoS accounting and failure watching need that resolution); a
decision is taken every `decide_every_s`. Each decision is journaled whether it acts or not, as one record that the
journal and the observers (the Prometheus exporter, the terminal view) all get; what acts goes to the job's one
realization port (`chronos.tune.realization`: restart, paced or Kubernetes, chosen at wiring; the loop does not
know which). Everything the loop knows is handed to the observers as values; the loop itself never formats or
serves.

It is meant to run for weeks beside a job, so nothing outside it ends it: a source that fails is a
missing reading (each outage said when it begins and when it ends; decisions held while a source they
need is out; failures not watched while the job's state is unknown); a model fit that fails keeps the
models there are; a retune that fails is finished from the journal later, with backoff, and no other
decision is taken meanwhile. Every completed step is a heartbeat the exporter serves. What it keeps in
memory is bounded (readings by age, retunes and failures by count, journaled decisions by retention).
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from chronos.backoff import Backoff
from chronos.clock import wall_ms
from chronos.model import SourceFailure, describe
from chronos.optimizer.decide import Decision, decide
from chronos.optimizer.evaluate import Evaluation, JobModels, TuneHistory, evaluate
from chronos.optimizer.model_values import Observation
from chronos.optimizer.policy import TunePolicy
from chronos.tune.decided import Decided
from chronos.tune.failures import FailureWatch, ObservedFailure
from chronos.tune.fitting import ModelBook
from chronos.tune.journal import DECISION_RETENTION_MS, DecisionRecord, Journal, LiveLatency, LiveRecovery
from chronos.tune.live_latency import LiveLatencyWindows
from chronos.tune.outages import OutageEvent, Outages
from chronos.tune.qos_account import QosAccount
from chronos.tune.readings import NEEDED_FOR_DECISIONS, NEEDED_FOR_FAILURES, LiveReading
from chronos.tune.realization import JobRealization, Realized
from chronos.tune.retune import RetuneOutcome, TunedJob
from chronos.tune.sustained_load import sustained_rate

RETUNE_RETRY = Backoff(first_s=30.0, factor=2.0, max_s=600.0)  # a failed retune, finished from the journal
MAX_EVENTS = 1000  # retune and failure times kept (the hourly cap needs an hour, the MTBF a few hundred)
PRUNE_EVERY_S = 3600.0


class Collector(Protocol):
    def collect(self, job_id: str) -> LiveReading: ...


class TuneObserver(Protocol):
    def reading(self, job: TunedJob, reading: LiveReading, policy: TunePolicy,
                latency_violation_s: float, recovery_violation_s: float) -> None: ...
    def decision(self, job: TunedJob, decided: Decided) -> None: ...
    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None: ...
    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None: ...
    def message(self, text: str) -> None: ...
    def outage(self, job: TunedJob, event: OutageEvent) -> None:
        """A source went away (or came back): said once each way."""
        ...
    def fit_failed(self, job: TunedJob, error: str) -> None:
        """A model fit failed; the models in use stay."""
        ...
    def stepped(self, wall_ms: int) -> None:
        """A step completed: the loop's heartbeat."""
        ...


@dataclass(frozen=True)
class LoopSettings:
    collect_every_s: float = 5.0
    decide_every_s: float = 30.0
    dry_run: bool = False  # decide and journal, realize nothing
    history_s: float = 3600.0  # readings kept for the forecast and the checkpoint cost
    decision_retention_ms: int = DECISION_RETENTION_MS  # older journaled decisions become daily summaries
    seed: int = 0  # of the retry jitter
    learn_latency_s: float = 600.0  # steady running at one interval that makes a point of the latency model


@dataclass
class LoopState:
    job: TunedJob
    started_at_s: float
    retunes_at_s: list[float] = field(default_factory=list)
    failures_at_s: list[float] = field(default_factory=list)
    last_decision: Decision | None = None
    last_evaluation: Evaluation | None = None
    last_reading: LiveReading | None = None
    wanted: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    recoveries_s: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))  # measured on the live job
    rate_ceiling: float | None = None  # the highest one-minute mean input rate seen by this tuner (the ceiling rule)


class TuneLoop:
    def __init__(
        self,
        job: TunedJob,
        policy: TunePolicy,
        collector: Collector,
        realization: JobRealization,
        journal: Journal,
        models: ModelBook,
        observer: TuneObserver,
        settings: LoopSettings = LoopSettings(),
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = wall_ms,
        probe: Callable[[], str] | None = None,
        recovery_settings: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """`probe` (`chronos tune --allow-fault`): injects one fault into the live job (returns what it did), used
        once, while there are no models, after the startup grace and once a checkpoint has been measured: the
        failure it causes is watched and measured like any live failure, and gives the cold start its first
        measured recovery instead of a default. `recovery_settings`: the cluster's in force (heartbeats, restart
        strategy, spare TaskManagers), stored with every live recovery so the phase model knows what it was
        measured at."""
        self._probe = probe
        self._recovery_settings = recovery_settings
        self._realization = realization
        self._policy = policy
        self._wall_ms = wall_ms
        self._collector = collector
        self._journal = journal
        self._models = models
        self._observer = observer
        self._settings = settings
        self._clock = clock
        now = clock()
        self.state = LoopState(job, started_at_s=now)
        self._observed_since_s = now
        self._readings: deque[tuple[float, LiveReading]] = deque()
        self._watch = FailureWatch(timeout_s=max(600.0, 3 * policy.recovery_s))
        self.qos = QosAccount(hold_ms=self._watch.hold_ms)
        self._next_decision_s = now + settings.decide_every_s
        self._outages = Outages()
        self._rng = random.Random(settings.seed)
        self._retune_retry: tuple[float, int] | None = None  # (when, attempt): a failed retune to finish
        self._next_prune_s = now
        self._latency_windows = LiveLatencyWindows(settle_s=policy.latency_window_s, length_s=settings.learn_latency_s)

    # -- resuming ---------------------------------------------------------------------------------
    def finish_pending(self) -> RetuneOutcome | None:
        """Finish or roll back a retune a previous tuner left unfinished, before watching anything."""
        pending = self._journal.unfinished(self.state.job.spec.name)
        if pending is None:
            return None
        self._observer.message(f"finishing retune {pending.retune_id} left at step {pending.step!r} "
                               f"(savepoint {pending.savepoint or 'not yet journaled'})")
        realized = self._realization.resume(pending, self.state.job)
        self._after_retune(realized)
        return realized.retune

    def start(self) -> None:
        """Before watching: finish what a previous tuner left; if that fails now, it is retried like any
        failed retune (the job may be stopped with its savepoint journaled: never given up on). A paced job's
        journaled cadence is taken over as it is: no restart, no decision needed."""
        try:
            self.finish_pending()
        except Exception as exc:  # noqa: BLE001 - retried with backoff from the loop
            self._schedule_retry(self._clock(), 1, describe(exc))
        adopted = self._realization.adopt(self.state.job, take_over=not self._settings.dry_run)
        self.state.job = adopted.job
        if (held := adopted.cadence) is not None:
            self._observer.message(f"pacing {self.state.job.job_id} at {held.to_ms / 1000:g} s, the journaled "
                                       f"cadence {held.cadence_id} (its own interval "
                                       f"{self.state.job.settings.interval_ms / 1000:g} s is the fallback)")

    # -- one period -------------------------------------------------------------------------------
    def step(self) -> Decision | None:
        now = self._clock()
        reading = self._collect()  # its interval: the one the job checkpoints at (a paced job's cadence)
        self.state.last_reading = reading
        for event in self._outages.feed(reading.failures, now):
            self._observer.outage(self.state.job, event)
        self._readings.append((now, reading))
        sustained = sustained_rate(((t, r.input_rate) for t, r in reversed(self._readings)), now)
        if sustained is not None:
            self.state.rate_ceiling = max(self.state.rate_ceiling or 0.0, sustained)
        while self._readings and now - self._readings[0][0] > self._settings.history_s:
            self._readings.popleft()
        failure = None
        # With the job's state unknown, or the job stopped by a retune still to be finished, nothing is a failure.
        if not reading.missing(NEEDED_FOR_FAILURES) and self._retune_retry is None:
            was_failing = self._watch.in_failure
            failure = self._watch.feed(reading)
            if not was_failing and (self._watch.in_failure or failure is not None):
                _keep_last(self.state.failures_at_s, now)
        latency_v, recovery_v = self.qos.add(reading, self._policy, self._watch.failure_started_ms, failure)
        self._observer.reading(self.state.job, reading, self._policy, latency_v, recovery_v)
        if failure is not None:
            self._learn(failure)
        window = self._latency_windows.feed(reading, self._watch.in_failure or failure is not None
                                            or self._retune_retry is not None)
        if window is not None:
            self._learn_latency(window, reading.at_ms)
        self._maybe_probe(now, reading)
        self._prune(now)
        if self._retune_retry is not None:
            self._retry_retune(now)
            return None
        if now < self._next_decision_s or self._watch.in_failure:
            return None
        self._next_decision_s = now + self._settings.decide_every_s
        if reading.missing(NEEDED_FOR_DECISIONS):
            return None  # held: the outage that holds it was said when it began
        return self._decide(now)

    def _collect(self) -> LiveReading:
        try:
            return self._collector.collect(self.state.job.job_id)
        except Exception as exc:  # noqa: BLE001 - a collector's failure is a reading of nothing, never the end
            return LiveReading.unreadable(self._wall_ms(), SourceFailure("collector", describe(exc)))

    def _learn(self, failure: ObservedFailure) -> None:
        c = failure.catch_up
        self._journal.record_recovery(LiveRecovery(
            self.state.job.spec.name, failure.failed_ms, failure.interval_ms, failure.rate, failure.recovery_s,
            failure.running_ms, c.backlog, c.input_rate, c.capacity, c.drain_rate, self._recovery_settings))
        models = self._models.models
        if failure.recovery_s is not None:
            self.state.recoveries_s.append(failure.recovery_s)
        if failure.recovery_s is not None and failure.interval_ms:
            failed_before = self._models.fit_failures
            models = self._models.add_recovery(Observation(failure.interval_ms / 1000, failure.rate, failure.recovery_s))
            if self._models.fit_failures > failed_before:
                self._observer.fit_failed(self.state.job, self._models.last_fit_error or "the model fit failed")
        self._observer.failure(self.state.job, failure, models)

    def _learn_latency(self, window: Observation, ended_ms: int) -> None:
        """A window of steady running at one interval: the live job's own p99 there, a point of the latency model,
        journaled first (the next tuner starts from it, as from the live recoveries)."""
        self._journal.record_latency(LiveLatency(self.state.job.spec.name, ended_ms, round(window.interval_s * 1000),
                                                 window.rate, window.value))
        failed_before = self._models.fit_failures
        models = self._models.add_latency(window)
        if self._models.fit_failures > failed_before:
            self._observer.fit_failed(self.state.job, self._models.last_fit_error or "the model fit failed")
            return
        fitted = "" if models.latency is None else \
            f"; latency model refitted ({self._models.live_latencies} live windows beside the profile's points)"
        self._observer.message(f"live p99 at {window.interval_s:g} s and {window.rate:,.0f}/s: "
                               f"{window.value / 1000:.2f} s over a steady window{fitted}")

    def _maybe_probe(self, now: float, reading: LiveReading) -> None:
        models = self._models.models
        if (self._probe is None or self._watch.in_failure or models.recovery is not None or models.latency is not None
                or now - self.state.started_at_s < self._policy.startup_grace_s or not reading.checkpoint_costs_s
                or self._retune_retry is not None or not reading.running):
            return
        probe, self._probe = self._probe, None  # once
        try:
            done = probe()
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run leaves the defaults in place
            self._observer.message(f"recovery probe failed ({describe(exc)}); the cold start keeps its defaults")
            return
        self._observer.message(f"recovery probe (--allow-fault): {done}; its recovery is measured like any failure's")

    def _prune(self, now: float) -> None:
        if now < self._next_prune_s:
            return
        self._next_prune_s = now + PRUNE_EVERY_S
        self._journal.prune_decisions(self._wall_ms() - self._settings.decision_retention_ms)

    def _history(self, now: float) -> TuneHistory:
        readings = [r for _, r in self._readings]
        rates = tuple(r.input_rate for r in readings if r.input_rate is not None)
        latest = readings[-1]
        costs = next((r.checkpoint_costs_s for r in reversed(readings) if r.checkpoint_costs_s), ())
        job = self.state.job
        return TuneHistory(
            interval_s=job.effective_ms / 1000,
            paced=self._realization.paces,
            configured_s=job.settings.interval_ms / 1000,
            wanted_recent=tuple(self.state.wanted),
            rates=rates,
            rate_step_s=self._settings.collect_every_s,
            p99_ms=latest.p99_ms,
            checkpoint_costs_s=costs,
            failures_at_s=tuple(self.state.failures_at_s),
            observed_since_s=self._observed_since_s,
            now_s=now,
            started_at_s=self.state.started_at_s,
            retunes_at_s=tuple(self.state.retunes_at_s),
            recoveries_s=tuple(self.state.recoveries_s),
            rate_ceiling=self.state.rate_ceiling,
        )

    def _decide(self, now: float) -> Decision | None:
        history = self._history(now)
        if not history.rates:
            self._observer.message("no input rate readable yet; not deciding")
            return None
        evaluation = evaluate(history, self._models.models, self._policy)
        decision = decide(evaluation, history, self._policy, now)
        if decision.wanted_s is not None:
            self.state.wanted.append((now, decision.wanted_s))
        if decision.action != "keep" and self._settings.dry_run:
            decision = _advised(decision)
        self.state.last_decision, self.state.last_evaluation = decision, evaluation
        decided = Decided(self._record(decision, evaluation), decision, evaluation)
        self._journal.record_decision(decided.record)
        self._observer.decision(self.state.job, decided)
        if decision.action == "keep":
            return decision
        try:
            realized = self._realization.realize(self.state.job, decision)
        except Exception as exc:  # noqa: BLE001 - journaled step by step: finished from the journal later
            self._schedule_retry(now, 1, describe(exc))
            return decision
        if realized.retune is not None:
            self._after_retune(realized)
        self.state.job = realized.job
        return decision

    def _schedule_retry(self, now: float, attempt: int, error: str) -> None:
        delay = RETUNE_RETRY.delay(attempt, self._rng)
        self._retune_retry = (now + delay, attempt)
        self._observer.message(f"retune failed ({error}); it is journaled and will be finished in {delay:.0f} s; "
                               "no other decision until then")

    def _retry_retune(self, now: float) -> None:
        assert self._retune_retry is not None
        when, attempt = self._retune_retry
        if now < when:
            return
        try:
            self._retune_retry = None
            self.finish_pending()
        except Exception as exc:  # noqa: BLE001 - tried again, later still
            self._schedule_retry(now, attempt + 1, describe(exc))

    def _record(self, decision: Decision, evaluation: Evaluation) -> DecisionRecord:
        current = decision.current
        p99 = evaluation.observed_p99_ms
        return DecisionRecord(
            self._wall_ms(), self.state.job.spec.name, self.state.job.job_id, decision.action, decision.interval_s,
            decision.wanted_s, decision.feasible, decision.binding, decision.reason, decision.explain(),
            observed_p99_s=None if p99 is None else p99 / 1000, input_rate=evaluation.observed_rate,
            forecast_rate=decision.forecast_rate,
            predicted_latency_s=None if current.latency is None else current.latency.median / 1000,
            predicted_recovery_s=None if current.recovery is None else current.recovery.median,
            target_latency_s=None if self._policy.latency_p99_ms is None else self._policy.latency_p99_ms / 1000,
            target_recovery_s=self._policy.recovery_s,
            latency_violation_s=self.qos.latency_s, recovery_violation_s=self.qos.recovery_s)

    def _after_retune(self, realized: Realized) -> None:
        outcome = realized.retune
        assert outcome is not None
        if outcome.outcome != "abandoned":
            now = self._clock()
            _keep_last(self.state.retunes_at_s, now)
            self.state.started_at_s = now
            self._watch.reset()
            self.qos.last_at_ms = None
        self.state.job = realized.job
        self._latency_windows.reset()
        self._observer.retune(self.state.job, outcome)

    @property
    def retune_pending(self) -> bool:
        """A failed retune waits to be finished from the journal: the job may be stopped, on purpose."""
        return self._retune_retry is not None

    # -- running ----------------------------------------------------------------------------------
    def tick(self) -> Decision | None:
        """One step and its heartbeat: what `run` does each period, and a many-job controller on each job's turn."""
        decision = self.step()
        self._observer.stepped(self._wall_ms())
        return decision

    def finish(self) -> None:
        """The run is over: a failure still open is accounted up to now."""
        self.qos.finish(self._watch.failure_started_ms, self._wall_ms(), self._policy)

    def run(self, stop: threading.Event, duration_s: float | None = None) -> None:
        end = None if duration_s is None else self._clock() + duration_s
        while not stop.is_set() and (end is None or self._clock() < end):
            started = self._clock()
            self.tick()
            stop.wait(max(0.0, self._settings.collect_every_s - (self._clock() - started)))
        self.finish()


def _keep_last(times: list[float], now: float) -> None:
    times.append(now)
    del times[:-MAX_EVENTS]


def _advised(decision: Decision) -> Decision:
    verb = "pace at" if decision.action == "pace" else "retune to"
    return replace(decision, action="keep", reason=f"dry run: would {verb} {decision.interval_s:g} s ({decision.reason})",
                   interval_s=decision.current.interval_s, fallback_s=None)

