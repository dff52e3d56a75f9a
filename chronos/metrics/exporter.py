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
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app

from chronos.model import SOURCES

DOWNTIME_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0)
ACTIONS = ("keep", "retune", "pace")
MODES = ("models", "cold-start", "baseline")  # the decision core's Mode
TRIGGER_OUTCOMES = ("completed", "failed", "skipped-in-flight", "skipped-not-running")
REALIZERS = ("paced", "restart", "kubernetes")
PACING_ERROR_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 15.0)
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
        self.decisions = Counter("chronos_decisions_total", "Decisions taken (action: keep, retune = a restart, "
                                 "pace = a paced job's cadence change).",
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
        self.collect_errors = Counter("chronos_collect_errors_total",
                                      "Readings in which a source could not be read (source: flink-rest, kafka, "
                                      "reporter, latency, collector).", ("job_name", "source"), registry=registry)
        self.sources_out = Gauge("chronos_source_up", "1 while a source answers, 0 during an outage.",
                                 ("job_name", "source"), registry=registry)
        self.fit_failures = Counter("chronos_model_fit_failures_total",
                                    "Model fits that failed (timed out, killed, raised); the models in use stayed.",
                                    job, registry=registry)
        self.realizer = Gauge("chronos_realizer_info", "1 for the way a decided interval reaches the job (realizer: "
                              "paced = chronos triggers its checkpoints, restart, kubernetes).",
                              ("job_name", "realizer"), registry=registry)
        self.paced = Gauge("chronos_paced_interval_seconds",
                           "The cadence chosen for a paced job's checkpoints (its own interval is the fallback).", job,
                           registry=registry)
        self.effective = Gauge("chronos_effective_checkpoint_interval_seconds",
                               "Measured between the trigger times of the two newest completed checkpoints.", job,
                               registry=registry)
        self.triggers = Counter("chronos_checkpoint_triggers_total",
                                "Checkpoints of a paced job by outcome (completed, failed, skipped-in-flight: one was "
                                "already in flight when due, skipped-not-running).", ("job_name", "outcome"),
                                registry=registry)
        self.pacing_error = Histogram("chronos_pacing_error_seconds",
                                      "|measured - chosen| interval between consecutive completed checkpoints at one "
                                      "cadence.", job, buckets=PACING_ERROR_BUCKETS, registry=registry)
        self.mode = Gauge("chronos_decision_mode_info", "1 for what the last decision was made from (mode: models = "
                          "fitted from a profile or live failures, cold-start = no models yet: Young's interval "
                          "from the live checkpoint cost, bounded by the targets, baseline = a baseline strategy).",
                          ("job_name", "mode"), registry=registry)
        self.recovery_forecast = Gauge(
            "chronos_recovery_forecast_seconds", "Predicted time from a fault until every task runs again (detect + "
            "reschedule + restore; catch-up comes on top), at the recovery settings in force (settings: now) and at "
            "the ones chronos proposes (settings: proposed); fault: kill (a dead TaskManager) or pause (a hung one).",
            ("job_name", "settings", "fault"), registry=registry)
        self.heartbeat = Gauge("chronos_loop_heartbeat_timestamp_seconds",
                               "When the tuning loop last completed a step (Unix time).", registry=registry)

    def set_targets(self, name: str, latency_p99_s: float | None, recovery_s: float) -> None:
        """`latency_p99_s` None: no latency target, and no series for one (a dashboard draws none)."""
        job = job_label(name)
        if latency_p99_s is not None:
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
        self.fit_failures.labels(job)
        for source in SOURCES:
            self.collect_errors.labels(job, source)
            self.sources_out.labels(job, source).set(1)

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
                predicted_latency_s: float | None, predicted_recovery_s: float | None, mode: str = "models") -> None:
        job = job_label(name)
        self.decisions.labels(job, action).inc()
        for each in MODES:
            self.mode.labels(job, each).set(1.0 if each == mode else 0.0)
        if wanted_s is not None:
            self.wanted.labels(job).set(wanted_s)
        self.feasible.labels(job).set(1.0 if feasible else 0.0)
        self.forecast.labels(job).set(forecast_rate)
        if predicted_latency_s is not None:
            self.predicted.labels(job, "latency").set(predicted_latency_s)
        if predicted_recovery_s is not None:
            self.predicted.labels(job, "recovery").set(predicted_recovery_s)

    def set_recovery_forecast(self, name: str, settings: str, fault: str, seconds: float) -> None:
        self.recovery_forecast.labels(job_label(name), settings, fault).set(seconds)

    def set_model_error(self, name: str, model: str, mape: float | None) -> None:
        if mape is not None:
            self.model_error.labels(job_label(name), model).set(mape)

    def retuned(self, name: str, outcome: str, downtime_s: float | None) -> None:
        job = job_label(name)
        self.retunes.labels(job, outcome).inc()
        if downtime_s is not None:
            self.downtime.labels(job).observe(downtime_s)

    def set_realizer(self, name: str, realizer: str) -> None:
        job = job_label(name)
        for known in REALIZERS:
            self.realizer.labels(job, known).set(1.0 if known == realizer else 0.0)
        for outcome in TRIGGER_OUTCOMES:  # at 0 whatever the realizer: a dashboard rates them
            self.triggers.labels(job, outcome)
        self.pacing_error.labels(job)

    def paced_at(self, name: str, cadence_s: float) -> None:
        self.paced.labels(job_label(name)).set(cadence_s)

    def triggered(self, name: str, outcome: str) -> None:
        self.triggers.labels(job_label(name), outcome).inc()

    def checkpoint_completed(self, name: str, effective_s: float, error_s: float | None) -> None:
        job = job_label(name)
        self.effective.labels(job).set(effective_s)
        if error_s is not None:
            self.pacing_error.labels(job).observe(error_s)

    def failed(self, name: str, recovery_s: float | None) -> None:
        job = job_label(name)
        self.failures.labels(job).inc()
        if recovery_s is not None:
            self.recovery.labels(job).set(recovery_s)

    def source_errors(self, name: str, sources: Iterable[str]) -> None:
        for source in sources:
            self.collect_errors.labels(job_label(name), source).inc()

    def source_up(self, name: str, source: str, up: bool) -> None:
        self.sources_out.labels(job_label(name), source).set(1 if up else 0)


class Heartbeat:
    """When the loop last completed a step, for the liveness check: a loop frozen for longer than
    `stall_after_s` (a hung call, a deadlock) is reported unhealthy, and Kubernetes restarts the pod;
    the journal lets the next tuner finish whatever this one was doing."""

    def __init__(self, stall_after_s: float, clock: Callable[[], float] = time.time) -> None:
        self._stall_after_s = stall_after_s
        self._clock = clock
        self._last = clock()  # a loop that has not stepped yet is starting, not stalled
        self._lock = threading.Lock()

    def beat(self, at_s: float) -> None:
        with self._lock:
            self._last = at_s

    def age_s(self) -> float:
        with self._lock:
            return self._clock() - self._last

    def healthy(self) -> bool:
        return self.age_s() <= self._stall_after_s


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


@dataclass
class MetricsServer:
    """The HTTP endpoint Prometheus scrapes (/metrics) and Kubernetes probes (/healthz); `close` frees the port."""

    server: WSGIServer
    port: int

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(registry: CollectorRegistry, port: int, address: str = "127.0.0.1",
          heartbeat: Heartbeat | None = None) -> MetricsServer:
    """/metrics from `registry`; /healthz 200 while `heartbeat` is fresh, 503 once the loop has stalled."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            age = heartbeat.age_s() if heartbeat is not None else 0.0
            ok = heartbeat is None or heartbeat.healthy()
            start_response("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")])
            return [f"{'ok' if ok else 'stalled'}: last step {age:.0f} s ago\n".encode()]
        return metrics(environ, start_response)  # type: ignore[no-any-return]

    server = make_server(address, port, app, server_class=_ThreadingServer, handler_class=_QuietHandler)
    # shutdown() waits up to one poll interval (0.5 s by default): a stopping tuner should not
    threading.Thread(target=server.serve_forever, args=(0.05,), name="metrics-server", daemon=True).start()
    return MetricsServer(server, server.server_port)
