"""What a chronos user looks at, defined once: the Grafana dashboards are generated from these views
and `chronos report` draws the same views as PNGs, so the two can never disagree on a query.

Queries are written in Grafana's dialect (`$job_name`, `$__rate_interval`, `$__range`); `promql()`
turns one into plain PromQL for a given job, which is how the report and the tests run them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

JOB = 'job_name=~"$job_name"'


@dataclass(frozen=True)
class Series:
    expr: str
    legend: str


@dataclass(frozen=True)
class View:
    key: str  # file-name-safe, also the PNG's name
    title: str
    description: str
    unit: Literal["s", "percentunit", "bytes", "short", "ops"]
    series: tuple[Series, ...]
    kind: Literal["timeseries", "stat", "bargauge"] = "timeseries"  # bargauge: one bar per series, in query order
    width: int = 12
    store_backed: bool = False  # `chronos report --db` can draw it from the tuner's journal


@dataclass(frozen=True)
class Annotation:
    name: str
    expr: str
    text: str
    color: str


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    views: tuple[View, ...]
    annotations: tuple[Annotation, ...] = ()


RETUNES = Annotation(
    "retunes", f'increase(chronos_retunes_total{{{JOB}}}[1m]) > 0', "retune {{outcome}} ({{job_name}})", "orange")
FAILURES = Annotation("failures", f'increase(chronos_failures_total{{{JOB}}}[1m]) > 0', "failure ({{job_name}})", "red")

QOS = Dashboard(
    uid="chronos-qos",
    title="chronos / QoS",
    description="Is the job meeting its p99-latency and recovery-time targets, and what did chronos do about it?",
    annotations=(RETUNES, FAILURES),
    views=(
        View("violations", "QoS violations", "Share of time outside each target (seconds of violation per second).",
             "percentunit",
             (Series(f'sum by (job_name, kind) (rate(chronos_qos_violation_seconds_total{{{JOB}}}[$__rate_interval]))',
                     "{{job_name}} {{kind}}"),), store_backed=True),
        View("violation-totals", "QoS-violation seconds in range", "Seconds outside each target in the time range.",
             "s",
             (Series(f'sum by (job_name, kind) (increase(chronos_qos_violation_seconds_total{{{JOB}}}[$__range]))',
                     "{{job_name}} {{kind}}"),), kind="stat", store_backed=True),
        View("latency", "p99 latency against its target",
             "Observed end-to-end p99, the model's prediction at the interval in force, and the target.", "s",
             (Series(f'chronos_latency_p99_seconds{{{JOB}}}', "{{job_name}} observed p99"),
              Series(f'chronos_predicted_seconds{{{JOB}, kind="latency"}}', "{{job_name}} predicted"),
              Series(f'chronos_qos_target_seconds{{{JOB}, kind="latency"}}', "{{job_name}} target")), store_backed=True),
        View("recovery", "Recovery time: measured, predicted, target",
             "The last failure's measured recovery, the model's prediction at the interval in force, the target.", "s",
             (Series(f'chronos_recovery_seconds{{{JOB}}}', "{{job_name}} measured"),
              Series(f'chronos_predicted_seconds{{{JOB}, kind="recovery"}}', "{{job_name}} predicted"),
              Series(f'chronos_qos_target_seconds{{{JOB}, kind="recovery"}}', "{{job_name}} target")),
             store_backed=True),
        View("interval", "Checkpoint interval",
             "Interval in force and the one the strategy wants before stabilization; retunes are annotated.", "s",
             (Series(f'chronos_checkpoint_interval_seconds{{{JOB}}}', "{{job_name}} in force"),
              Series(f'chronos_recommended_interval_seconds{{{JOB}}}', "{{job_name}} recommended")),
             width=24, store_backed=True),
    ),
)

INTERNALS = Dashboard(
    uid="chronos-internals",
    title="chronos / checkpoints, load and models",
    description="What the decisions rest on: checkpoint cost, the input rate and its forecast, model error, "
                "and what retuning cost.",
    annotations=(RETUNES,),
    views=(
        View("checkpoint-duration", "Checkpoint duration", "Flink's last completed checkpoint: end-to-end duration.",
             "s", (Series(f'flink_jobmanager_job_lastCheckpointDuration{{{JOB}}} / 1000', "{{job_name}}"),)),
        View("checkpoint-size", "Checkpoint size", "Flink's last completed checkpoint: state size.", "bytes",
             (Series(f'flink_jobmanager_job_lastCheckpointSize{{{JOB}}}', "{{job_name}}"),)),
        View("input-rate", "Input rate and forecast", "Observed input rate and the peak forecast over the horizon.",
             "ops",
             (Series(f'chronos_input_rate_events_per_second{{{JOB}}}', "{{job_name}} observed"),
              Series(f'chronos_forecast_input_rate_events_per_second{{{JOB}}}', "{{job_name}} forecast peak")),
             store_backed=True),
        View("model-error", "Model error (held-out MAPE)",
             "Cross-validated mean absolute percentage error of each model in use.", "percentunit",
             (Series(f'chronos_model_error_ratio{{{JOB}}}', "{{job_name}} {{model}}"),)),
        View("retune-downtime", "Retune downtime",
             "Mean stop-with-savepoint to all tasks RUNNING, and the number of retunes, by outcome.", "s",
             (Series(f'sum by (job_name) (chronos_retune_downtime_seconds_sum{{{JOB}}}) / '
                     f'sum by (job_name) (chronos_retune_downtime_seconds_count{{{JOB}}})', "{{job_name}} mean downtime"),
              Series(f'sum by (job_name, outcome) (chronos_retunes_total{{{JOB}}})', "{{job_name}} retunes {{outcome}}")),
             store_backed=True),
        View("checkpoint-cadence", "Checkpoint cadence",
             "The interval in force (a paced job's cadence), the interval measured between completed checkpoints, "
             "and a paced job's triggered checkpoints by outcome in the range.", "s",
             (Series(f'chronos_checkpoint_interval_seconds{{{JOB}}}', "{{job_name}} in force"),
              Series(f'chronos_effective_checkpoint_interval_seconds{{{JOB}}}', "{{job_name}} measured"),
              Series(f'sum by (job_name, outcome) (increase(chronos_checkpoint_triggers_total{{{JOB}}}[$__range]))',
                     "{{job_name}} triggers {{outcome}}"))),
        View("decisions", "Decisions, feasibility and mode",
             "Decisions by action in the range, whether some interval is predicted to meet both targets, and what "
             "the last decision was made from (models, cold-start: no models yet, baseline).",
             "short",
             (Series(f'sum by (job_name, action) (increase(chronos_decisions_total{{{JOB}}}[$__range]))',
                     "{{job_name}} {{action}}"),
              Series(f'chronos_qos_feasible{{{JOB}}}', "{{job_name}} feasible"),
              Series(f'chronos_decision_mode_info{{{JOB}}} == 1', "{{job_name}} mode: {{mode}}")), kind="stat"),
    ),
)

OVERVIEW = Dashboard(
    uid="chronos-overview",
    title="chronos / all jobs",
    description="Every job one chronos tunes (or several do), worst first: where the QoS targets are missed, and "
                "what chronos did about it. Pick a job here, then look at it on chronos / QoS.",
    annotations=(RETUNES, FAILURES),
    views=(
        View("overview-violations", "QoS-violation seconds per job in range, worst first",
             "Seconds each job spent outside a target (latency and recovery together) in the time range.", "s",
             (Series(f'sort_desc(sum by (job_name) (increase(chronos_qos_violation_seconds_total{{{JOB}}}[$__range])))',
                     "{{job_name}}"),), kind="bargauge", width=24),
        View("overview-violation-share", "Share of time outside a target, per job",
             "Seconds of violation per second, latency and recovery together, each job a line.", "percentunit",
             (Series(f'sum by (job_name) (rate(chronos_qos_violation_seconds_total{{{JOB}}}[$__rate_interval]))',
                     "{{job_name}}"),)),
        View("overview-interval", "Checkpoint interval in force, per job",
             "The interval (a paced job's cadence) each job checkpoints at; changes are chronos's decisions.", "s",
             (Series(f'chronos_checkpoint_interval_seconds{{{JOB}}}', "{{job_name}}"),)),
        View("overview-actions", "Retunes, cadence changes and failures per job in range, most first",
             "What chronos changed on each job (restarts and paced cadence changes) and the failures it saw.", "short",
             (Series(f'sort_desc(sum by (job_name) (increase(chronos_decisions_total{{{JOB}, action!="keep"}}[$__range])))',
                     "{{job_name}} changes"),
              Series(f'sort_desc(sum by (job_name) (increase(chronos_failures_total{{{JOB}}}[$__range])))',
                     "{{job_name}} failures")), kind="bargauge", width=24),
    ),
)

DASHBOARDS: tuple[Dashboard, ...] = (OVERVIEW, QOS, INTERNALS)


def promql(expr: str, job_name: str, rate_interval: str = "1m", range_: str = "1h") -> str:
    """A view's query as plain PromQL for one job (the label as Flink's reporter spells it)."""
    return (expr.replace("$__rate_interval", rate_interval).replace("$__range", range_)
            .replace("$job_name", re.escape(job_name)))


def all_views() -> tuple[View, ...]:
    return tuple(view for dashboard in DASHBOARDS for view in dashboard.views)
