"""The tuner's Prometheus metrics, on a registry passed in (never the global one), so a test reads
exactly the samples one tuner produced and two tuners in one process never collide.

Names follow the Prometheus conventions: base units (seconds, events per second, ratios), `_total`
on counters. The job is labelled `job_name`, spelled as Flink's Prometheus reporter spells it, so one
dashboard variable selects both chronos's and Flink's series; it is the pipeline name, stable across
retunes (a job id is not). A plain `job` label would clash with the scrape job's and be renamed.
Every series a dashboard queries exists from the first scrape (counters at 0), because rate() and
increase() cannot see a counter's first increment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

DOWNTIME_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0)
ACTIONS = ("keep", "retune")
OUTCOMES = ("verified", "rolled-back", "abandoned")
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def job_label(name: str) -> str:
    """Flink's reporter spelling of a job name (characters outside [a-zA-Z0-9:_] become _)."""
    return _INVALID.sub("_", name)


class TuneMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        job, kind = ("job_name",), ("job_name", "kind")
        self.violation = Counter("chronos_qos_violation_seconds_total",
                                 "Seconds the job spent outside a QoS target (kind: latency, recovery).", kind,
                                 registry=registry)
        self.target = Gauge("chronos_qos_target_seconds", "The QoS target (kind: latency = p99, recovery).", kind,
                            registry=registry)
        self.latency = Gauge("chronos_latency_p99_seconds", "Observed end-to-end p99 latency over the window.", job,
                             registry=registry)
        self.predicted = Gauge("chronos_predicted_seconds",
                               "Model prediction at the interval in force (kind: latency = p99, recovery).", kind,
                               registry=registry)
        self.interval = Gauge("chronos_checkpoint_interval_seconds", "Checkpoint interval in force.", job,
                              registry=registry)
        self.wanted = Gauge("chronos_recommended_interval_seconds",
                            "Interval the strategy would run, before stabilization.", job, registry=registry)
        self.feasible = Gauge("chronos_qos_feasible", "1 if some interval is predicted to meet both targets.", job,
                              registry=registry)
        self.input_rate = Gauge("chronos_input_rate_events_per_second", "Observed input rate.", job, registry=registry)
        self.forecast = Gauge("chronos_forecast_input_rate_events_per_second",
                              "Peak input rate forecast over the decision horizon.", job, registry=registry)
        self.model_error = Gauge("chronos_model_error_ratio",
                                 "Held-out mean absolute percentage error of a model (model: latency, recovery).",
                                 ("job_name", "model"), registry=registry)
        self.decisions = Counter("chronos_decisions_total", "Decisions taken (action: keep, retune).",
                                 ("job_name", "action"), registry=registry)
        self.retunes = Counter("chronos_retunes_total", "Retunes (outcome: verified, rolled-back, abandoned).",
                               ("job_name", "outcome"), registry=registry)
        self.downtime = Histogram("chronos_retune_downtime_seconds",
                                  "Stop-with-savepoint request to every task of the new job RUNNING.", job,
                                  buckets=DOWNTIME_BUCKETS, registry=registry)
        self.failures = Counter("chronos_failures_total", "Failures of the live job seen by the tuner.", job,
                                registry=registry)
        self.recovery = Gauge("chronos_recovery_seconds", "Measured recovery time of the last failure of the live job.",
                              job, registry=registry)

    def set_targets(self, name: str, latency_p99_s: float, recovery_s: float) -> None:
        job = job_label(name)
        self.target.labels(job, "latency").set(latency_p99_s)
        self.target.labels(job, "recovery").set(recovery_s)
        for kind in ("latency", "recovery"):
            self.violation.labels(job, kind)
        for action in ACTIONS:
            self.decisions.labels(job, action)
        for outcome in OUTCOMES:
            self.retunes.labels(job, outcome)
        self.failures.labels(job)
        self.downtime.labels(job)

    def observe(self, name: str, *, interval_s: float, p99_s: float | None, input_rate: float | None,
                latency_violation_s: float, recovery_violation_s: float) -> None:
        job = job_label(name)
        self.interval.labels(job).set(interval_s)
        if p99_s is not None:
            self.latency.labels(job).set(p99_s)
        if input_rate is not None:
            self.input_rate.labels(job).set(input_rate)
        if latency_violation_s:
            self.violation.labels(job, "latency").inc(latency_violation_s)
        if recovery_violation_s:
            self.violation.labels(job, "recovery").inc(recovery_violation_s)

    def decided(self, name: str, action: str, *, wanted_s: float | None, feasible: bool, forecast_rate: float,
                predicted_latency_s: float | None, predicted_recovery_s: float | None) -> None:
        job = job_label(name)
        self.decisions.labels(job, action).inc()
        if wanted_s is not None:
            self.wanted.labels(job).set(wanted_s)
        self.feasible.labels(job).set(1.0 if feasible else 0.0)
        self.forecast.labels(job).set(forecast_rate)
        if predicted_latency_s is not None:
            self.predicted.labels(job, "latency").set(predicted_latency_s)
        if predicted_recovery_s is not None:
            self.predicted.labels(job, "recovery").set(predicted_recovery_s)

    def set_model_error(self, name: str, model: str, mape: float | None) -> None:
        if mape is not None:
            self.model_error.labels(job_label(name), model).set(mape)

    def retuned(self, name: str, outcome: str, downtime_s: float | None) -> None:
        job = job_label(name)
        self.retunes.labels(job, outcome).inc()
        if downtime_s is not None:
            self.downtime.labels(job).observe(downtime_s)

    def failed(self, name: str, recovery_s: float | None) -> None:
        job = job_label(name)
        self.failures.labels(job).inc()
        if recovery_s is not None:
            self.recovery.labels(job).set(recovery_s)


@dataclass
class MetricsServer:
    """The HTTP endpoint Prometheus scrapes; `close` frees the port."""

    server: WSGIServer
    port: int

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(registry: CollectorRegistry, port: int, address: str = "127.0.0.1") -> MetricsServer:
    server, _ = start_http_server(port, addr=address, registry=registry)
    return MetricsServer(server, server.server_port)
