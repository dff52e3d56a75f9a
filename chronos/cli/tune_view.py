"""What `chronos tune` shows while it runs: a live terminal panel, or JSON lines. The metrics are an observer of
their own (chronos.metrics.tune_observer); `TuneObservers` hands every event to both, so the screen and the metrics
see the same events and neither goes through the other."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from chronos.cli.common import print_json_line
from chronos.metrics.tune_observer import MetricsObserver
from chronos.optimizer.decide import Decision
from chronos.optimizer.evaluate import JobModels
from chronos.optimizer.policy import TunePolicy
from chronos.optimizer.recovery_proposal import RecoveryProposal
from chronos.tune.decided import Decided
from chronos.tune.failures import ObservedFailure
from chronos.tune.journal import Cadence
from chronos.tune.outages import OutageEvent
from chronos.tune.pacer import Outcome
from chronos.tune.readings import NEEDED_FOR_DECISIONS, NEEDED_FOR_FAILURES, LiveReading
from chronos.tune.retune import RetuneOutcome, TunedJob

MODE_SAID = {"models": "models (decisions from the fitted models)",
             "cold-start": "cold start (no models yet: Young's interval from the live checkpoint cost, bounded by "
                           "the targets; a profile or live failures bring models)",
             "baseline": "baseline strategy"}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _s(value: float | None, unit: str = "s", fmt: str = ".1f") -> str:
    return "-" if value is None else f"{value:{fmt}} {unit}"


@dataclass
class _Screen:
    job: TunedJob | None = None
    reading: LiveReading | None = None
    policy: TunePolicy | None = None
    violations: list[float] = field(default_factory=lambda: [0.0, 0.0])
    decision: Decision | None = None
    events: deque[str] = field(default_factory=lambda: deque(maxlen=8))
    models: str = "-"
    realizer: str = "-"
    effective_s: float | None = None
    triggers: dict[str, int] = field(default_factory=dict)
    mode: str = "-"
    recovery: str = ""


class TuneDisplay:
    """Implements the loop's TuneObserver; `live` is a rich Live in a terminal, None for JSON or a pipe.
    `tag`: the job's name on every line, for one of many jobs in one process (no live panel then: lines)."""

    def __init__(self, console: Console, as_json: bool, tag: str | None = None) -> None:
        self._console = console
        self._json = as_json
        self._tag = tag
        self._screen = _Screen()
        self.live: Live | None = None
        self.retunes = 0
        self.decisions = 0
        self.failures = 0

    def start(self) -> None:
        if not self._json and self._tag is None and self._console.is_terminal:
            self.live = Live(self._render(), console=self._console, refresh_per_second=2, transient=False)
            self.live.start()

    def stop(self) -> None:
        if self.live is not None:
            self.live.update(self._render())
            self.live.stop()

    def watching(self, job: TunedJob) -> None:
        """The job is known before its first reading: the model errors are exported from the start."""
        self._screen.job = job

    def realizing(self, job: TunedJob, realizer: str, why: str) -> None:
        """Which realizer is in force, and why: said once, at the start."""
        self._screen.realizer = realizer
        self._event("realizer", f"realizer: {realizer} ({why})", realizer=realizer, why=why)

    def describe_models(self, models: JobModels) -> None:
        parts = []
        for name, model in (("recovery", models.recovery), ("latency", models.latency),
                            ("checkpoint", models.checkpoint)):
            if model is None:
                parts.append(f"{name}: none")
            else:
                parts.append(f"{name}: {model.report.family}, held-out MAPE {model.report.held_out_mape:.1%} "
                             f"({model.report.observations} points"
                             + (f"; set aside as falling: {', '.join(model.report.falling)}" if model.report.falling
                                else "") + ")")
        self._screen.models = "; ".join(parts)
        self.message("models: " + self._screen.models)

    def recovery_proposal(self, job: TunedJob, proposal: RecoveryProposal, flink_config: list[str], apply: str,
                          job_settings: tuple[tuple[str, str], ...] = ()) -> None:
        """The cluster-level recovery settings chronos proposes (detection, restart delay, spare capacity) with
        their predicted effect: said once, at the start; put in force by `apply` (a cluster restart), never by
        the tuner itself."""
        kill = next(f for f in proposal.forecasts if f.fault == "kill")
        now, proposed = kill.now.until_running_s, kill.proposed.until_running_s
        if proposal.changes:
            changes = "; ".join(f"{c.what}: {c.now} -> {c.proposed}" for c in proposal.changes)
            text = (f"recovery settings: a TaskManager kill predicted back to RUNNING in {now:.0f} s now, "
                    f"{proposed:.0f} s at the proposal ({changes}; {proposal.model} phase model); apply: {apply}")
            self._screen.recovery = f"kill -> RUNNING {now:.0f} s now, {proposed:.0f} s proposed: {apply}"
        else:
            text = (f"recovery settings: as chronos would set them (a TaskManager kill predicted back to RUNNING in "
                    f"{now:.0f} s)")
            self._screen.recovery = f"as proposed (kill -> RUNNING {now:.0f} s)"
        self._event("recovery_proposal", text, job_id=job.job_id, model=proposal.model,
                    current=asdict(proposal.current), proposed=asdict(proposal.proposed),
                    spare_taskmanagers=proposal.spare_taskmanagers, changes=[asdict(c) for c in proposal.changes],
                    forecasts=[{"fault": f.fault, "now": asdict(f.now), "proposed": asdict(f.proposed)}
                               for f in proposal.forecasts], flink_config=flink_config, apply=apply,
                    with_next_retune=dict(job_settings))

    # -- TuneObserver --------------------------------------------------------------------------------
    def reading(self, job: TunedJob, reading: LiveReading, policy: TunePolicy, latency_violation_s: float,
                recovery_violation_s: float) -> None:
        self._screen.job, self._screen.reading, self._screen.policy = job, reading, policy
        self._screen.violations[0] += latency_violation_s
        self._screen.violations[1] += recovery_violation_s
        if self._json:
            self._reading_line(job, reading, latency_violation_s, recovery_violation_s)
        self._refresh()

    def decision(self, job: TunedJob, decided: Decided) -> None:
        self.decisions += 1
        decision, record = decided.decision, decided.record
        self._screen.decision = decision
        self._screen.mode = MODE_SAID[decision.mode]
        self._event("decision", record.explanation, mode=decision.mode, action=record.action,
                    interval_s=record.interval_s, wanted_s=record.wanted_s, reason=record.reason,
                    binding=record.binding, feasible=record.feasible, forecast_rate=round(record.forecast_rate or 0, 1),
                    forecast_method=decision.forecast_method, observed_rate=round(record.input_rate or 0, 1),
                    observed_p99_ms=decided.evaluation.observed_p99_ms,
                    latency_calibration=round(decided.evaluation.latency_calibration, 3))

    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None:
        self.retunes += outcome.outcome != "abandoned"
        entry = outcome.entry
        self._event("retune", f"retune {entry.retune_id} {outcome.outcome}: {entry.old_job_id} -> {job.job_id}, "
                    f"interval {entry.from_interval_ms / 1000:g} s -> {job.settings.interval_ms / 1000:g} s, "
                    f"downtime {_s(outcome.downtime_s, fmt='.2f')}",
                    retune_id=entry.retune_id, outcome=outcome.outcome, old_job_id=entry.old_job_id,
                    new_job_id=job.job_id, interval_ms=job.settings.interval_ms, savepoint=entry.savepoint,
                    downtime_s=outcome.downtime_s, explanation=entry.explanation)

    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None:
        self.failures += 1
        self._event("failure", f"failure at {failure.failed_ms}: recovered in {_s(failure.recovery_s)} "
                    f"at interval {failure.interval_ms / 1000:g} s, {failure.rate:,.0f} ev/s; model refitted",
                    failed_ms=failure.failed_ms, recovery_s=failure.recovery_s, interval_ms=failure.interval_ms,
                    rate=failure.rate)
        self.describe_models(models)

    def message(self, text: str) -> None:
        self._event("message", text)

    def outage(self, job: TunedJob, event: OutageEvent) -> None:
        if event.kind == "began":
            held = [what for what, needed in (("decisions", NEEDED_FOR_DECISIONS), ("failure watching",
                                                                                   NEEDED_FOR_FAILURES))
                    if event.source in needed]
            consequence = f"{' and '.join(held)} held until it is back" if held else "readings go on without it"
            text = f"{event.source} unavailable ({event.error}); {consequence}"
        else:
            text = f"{event.source} back after {event.duration_s or 0:.0f} s"
        self._event("outage", text, source=event.source, change=event.kind, error=event.error,
                    duration_s=None if event.duration_s is None else round(event.duration_s, 1))

    def fit_failed(self, job: TunedJob, error: str) -> None:
        self._event("fit-failed", f"{error}; the models in use stay", error=error)

    # -- PacingObserver (called from the pacer's thread) ----------------------------------------------
    def triggered(self, job_name: str, outcome: Outcome) -> None:
        self._screen.triggers[outcome] = self._screen.triggers.get(outcome, 0) + 1

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        self._screen.effective_s = effective_s

    def cadence(self, job_name: str, entry: Cadence) -> None:
        state = "in force" if entry.in_force_ms is not None else "decided"
        before = "not paced" if entry.from_ms is None else f"{entry.from_ms / 1000:g} s"
        self._event("cadence", f"cadence {entry.cadence_id} {state}: {before} -> {entry.to_ms / 1000:g} s "
                    f"(fallback {entry.fallback_ms / 1000:g} s), no restart",
                    cadence_id=entry.cadence_id, state=state, job_id=entry.job_id, from_ms=entry.from_ms,
                    to_ms=entry.to_ms, fallback_ms=entry.fallback_ms, decided_ms=entry.decided_ms,
                    in_force_ms=entry.in_force_ms)

    def stepped(self, wall_ms: int) -> None:
        return None

    # -- output ---------------------------------------------------------------------------------------
    def _reading_line(self, job: TunedJob, reading: LiveReading, latency_v: float, recovery_v: float) -> None:
        """JSON only: one line per collection, the time series a script plots or judges the run by."""
        self._event("reading", "", job_id=job.job_id, at_ms=reading.at_ms, running=reading.running,
                    interval_s=job.effective_ms / 1000, configured_interval_s=job.settings.interval_ms / 1000,
                    input_rate=_round(reading.input_rate),
                    throughput=_round(reading.throughput), lag=reading.lag, p99_ms=reading.p99_ms,
                    recent_p99_ms=reading.recent_p99_ms, staleness_ms=reading.output_staleness_ms,
                    latency_violation_s=round(latency_v, 3), recovery_violation_s=round(recovery_v, 3))

    def _event(self, kind: str, text: str, **fields: object) -> None:
        stamp = time.strftime("%H:%M:%S")
        if self._json:
            tag = {} if self._tag is None else {"job_name": self._tag}
            print_json_line({"event": kind, "at": stamp, "text": text, **tag, **fields})
            return
        if self._tag is not None:
            text = f"[{self._tag}] {text}"
        self._screen.events.append(f"{stamp} {text}")
        if self.live is None:
            self._console.print(f"{stamp} {text}", highlight=False)
        self._refresh()

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._render())

    def _render(self) -> Group:
        s = self._screen
        table = Table(show_header=False, title="chronos tune", title_justify="left")
        table.add_column("what", style="bold")
        table.add_column("value")
        if s.job is not None:
            table.add_row("job", f"{s.job.spec.name}  {s.job.job_id}")
            own = f"{s.job.settings.interval_ms / 1000:g} s"
            if s.job.paced_ms:
                counts = ", ".join(f"{n} {o}" for o, n in sorted(s.triggers.items())) or "none yet"
                table.add_row("interval", f"paced at {s.job.paced_ms / 1000:g} s (measured {_s(s.effective_s, fmt='.2f')}; "
                                          f"triggers: {counts}); its own {own} is the fallback")
            else:
                table.add_row("interval", own)
            table.add_row("realizer", s.realizer)
        if s.reading is not None and s.policy is not None:
            r, p = s.reading, s.policy
            table.add_row("input", _s(r.input_rate, "ev/s", ",.0f") + f", lag {_s(r.lag, 'records', ',.0f')}")
            target = "no target" if p.latency_p99_ms is None else f"target {p.latency_p99_ms:,.0f} ms"
            table.add_row("p99 latency", f"{_s(r.p99_ms, 'ms', ',.0f')} ({target})")
            table.add_row("QoS violations", f"latency {s.violations[0]:.0f} s, recovery {s.violations[1]:.0f} s "
                          f"(recovery target {p.recovery_s:g} s)")
        table.add_row("models", s.models)
        if s.recovery:
            table.add_row("recovery settings", s.recovery)
        table.add_row("mode", s.mode)
        if s.decision is not None:
            table.add_row("last decision", s.decision.explain())
        events = Table(show_header=False, box=None)
        for line in s.events:
            events.add_row(line)
        return Group(table, events)


class TuneObservers:
    """The loop's, the pacer's and the session's observer: every event to the screen, then to the metrics."""

    def __init__(self, display: TuneDisplay, metrics: MetricsObserver) -> None:
        self.display, self._metrics = display, metrics

    def watching(self, job: TunedJob) -> None:
        self.display.watching(job)
        self._metrics.watching(job)

    def realizing(self, job: TunedJob, realizer: str, why: str) -> None:
        self.display.realizing(job, realizer, why)
        self._metrics.realizing(job, realizer, why)

    def describe_models(self, models: JobModels) -> None:
        self.display.describe_models(models)
        self._metrics.describe_models(models)

    def recovery_proposal(self, job: TunedJob, proposal: RecoveryProposal, flink_config: list[str], apply: str,
                          job_settings: tuple[tuple[str, str], ...] = ()) -> None:
        self.display.recovery_proposal(job, proposal, flink_config, apply, job_settings)
        self._metrics.recovery_proposal(job, proposal, flink_config, apply, job_settings)

    def reading(self, job: TunedJob, reading: LiveReading, policy: TunePolicy, latency_violation_s: float,
                recovery_violation_s: float) -> None:
        self._metrics.reading(job, reading, policy, latency_violation_s, recovery_violation_s)
        self.display.reading(job, reading, policy, latency_violation_s, recovery_violation_s)

    def decision(self, job: TunedJob, decided: Decided) -> None:
        self._metrics.decision(job, decided)
        self.display.decision(job, decided)

    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None:
        self._metrics.retune(job, outcome)
        self.display.retune(job, outcome)

    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None:
        self._metrics.failure(job, failure, models)
        self.display.failure(job, failure, models)

    def message(self, text: str) -> None:
        self.display.message(text)

    def outage(self, job: TunedJob, event: OutageEvent) -> None:
        self._metrics.outage(job, event)
        self.display.outage(job, event)

    def fit_failed(self, job: TunedJob, error: str) -> None:
        self._metrics.fit_failed(job, error)
        self.display.fit_failed(job, error)

    def stepped(self, wall_ms: int) -> None:
        self._metrics.stepped(wall_ms)
        self.display.stepped(wall_ms)

    def triggered(self, job_name: str, outcome: Outcome) -> None:
        self._metrics.triggered(job_name, outcome)
        self.display.triggered(job_name, outcome)

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        self._metrics.completed(job_name, effective_s, error_s)
        self.display.completed(job_name, effective_s, error_s)

    def cadence(self, job_name: str, entry: Cadence) -> None:
        self._metrics.cadence(job_name, entry)
        self.display.cadence(job_name, entry)
