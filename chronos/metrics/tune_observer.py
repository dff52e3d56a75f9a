"""The tuner's Prometheus metrics as an observer of the loop and the pacer, beside the terminal view: each event's
numbers go to the exporter here, whatever the screen (a live panel, JSON lines, nothing) shows of it."""

from __future__ import annotations

from chronos.metrics.exporter import Heartbeat, TuneMetrics, job_label
from chronos.optimizer.evaluate import JobModels
from chronos.optimizer.policy import TunePolicy
from chronos.optimizer.recovery_proposal import RecoveryProposal
from chronos.tune.decided import Decided
from chronos.tune.failures import ObservedFailure
from chronos.tune.journal import Cadence
from chronos.tune.outages import OutageEvent
from chronos.tune.pacer import Outcome
from chronos.tune.readings import LiveReading
from chronos.tune.retune import RetuneOutcome, TunedJob


class MetricsObserver:
    """Implements the loop's TuneObserver and the pacer's PacingObserver onto TuneMetrics (and the heartbeat the
    metrics server answers its health check from)."""

    def __init__(self, metrics: TuneMetrics, heartbeat: Heartbeat | None = None) -> None:
        self._metrics = metrics
        self._heartbeat = heartbeat
        self._job_name: str | None = None

    def watching(self, job: TunedJob) -> None:
        self._job_name = job.spec.name

    def realizing(self, job: TunedJob, realizer: str, why: str) -> None:
        self._metrics.set_realizer(job.spec.name, realizer)

    def describe_models(self, models: JobModels) -> None:
        if self._job_name is None:
            return
        for what, model in (("recovery", models.recovery), ("latency", models.latency),
                            ("checkpoint", models.checkpoint)):
            self._metrics.set_model_error(self._job_name, what, model.report.held_out_mape if model else None)

    def recovery_proposal(self, job: TunedJob, proposal: RecoveryProposal, flink_config: list[str], apply: str,
                          job_settings: tuple[tuple[str, str], ...] = ()) -> None:
        for forecast in proposal.forecasts:
            for settings, phases in (("now", forecast.now), ("proposed", forecast.proposed)):
                self._metrics.set_recovery_forecast(job.spec.name, settings, forecast.fault, phases.until_running_s)

    # -- TuneObserver --------------------------------------------------------------------------------
    def reading(self, job: TunedJob, reading: LiveReading, policy: TunePolicy, latency_violation_s: float,
                recovery_violation_s: float) -> None:
        self._metrics.source_errors(job.spec.name, (f.source for f in reading.failures if f.attempted))
        self._metrics.observe(job.spec.name, interval_s=job.effective_ms / 1000,
                              p99_s=None if reading.p99_ms is None else reading.p99_ms / 1000,
                              input_rate=reading.input_rate, latency_violation_s=latency_violation_s,
                              recovery_violation_s=recovery_violation_s)

    def decision(self, job: TunedJob, decided: Decided) -> None:
        record = decided.record
        self._metrics.decided(
            job.spec.name, record.action, wanted_s=record.wanted_s, feasible=record.feasible,
            forecast_rate=record.forecast_rate or 0.0, predicted_latency_s=record.predicted_latency_s,
            predicted_recovery_s=record.predicted_recovery_s, mode=decided.decision.mode)

    def retune(self, job: TunedJob, outcome: RetuneOutcome) -> None:
        self._metrics.retuned(job.spec.name, outcome.outcome, outcome.downtime_s)

    def failure(self, job: TunedJob, failure: ObservedFailure, models: JobModels) -> None:
        self._metrics.failed(job.spec.name, failure.recovery_s)
        self.describe_models(models)

    def message(self, text: str) -> None:
        return None

    def outage(self, job: TunedJob, event: OutageEvent) -> None:
        self._metrics.source_up(job.spec.name, event.source, event.kind == "ended")

    def fit_failed(self, job: TunedJob, error: str) -> None:
        self._metrics.fit_failures.labels(job_label(job.spec.name)).inc()

    def stepped(self, wall_ms: int) -> None:
        self._metrics.heartbeat.set(wall_ms / 1000)
        if self._heartbeat is not None:
            self._heartbeat.beat(wall_ms / 1000)

    # -- PacingObserver (called from the pacer's thread) ----------------------------------------------
    def triggered(self, job_name: str, outcome: Outcome) -> None:
        self._metrics.triggered(job_name, outcome)

    def completed(self, job_name: str, effective_s: float, error_s: float | None) -> None:
        self._metrics.checkpoint_completed(job_name, effective_s, error_s)

    def cadence(self, job_name: str, entry: Cadence) -> None:
        self._metrics.paced_at(job_name, entry.to_ms / 1000)
