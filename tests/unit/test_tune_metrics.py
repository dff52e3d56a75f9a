"""The exporter's samples, read off its own registry and over HTTP."""

from __future__ import annotations

import httpx
from prometheus_client import CollectorRegistry

from chronos.metrics.exporter import Heartbeat, TuneMetrics, serve


def test_every_figure_lands_under_its_conventional_name() -> None:
    registry = CollectorRegistry()
    metrics = TuneMetrics(registry)
    metrics.set_targets("fleet", latency_p99_s=1.0, recovery_s=60.0)
    metrics.observe("fleet", interval_s=10, p99_s=1.5, input_rate=2000, latency_violation_s=5, recovery_violation_s=0)
    metrics.observe("fleet", interval_s=10, p99_s=0.8, input_rate=2100, latency_violation_s=0, recovery_violation_s=2.5)
    metrics.decided("fleet", "retune", wanted_s=20, feasible=True, forecast_rate=2500,
                    predicted_latency_s=0.9, predicted_recovery_s=40)
    metrics.set_model_error("fleet", "recovery", 0.12)
    metrics.retuned("fleet", "verified", 3.4)
    metrics.failed("fleet", 35.0)
    value = registry.get_sample_value
    assert value("chronos_qos_violation_seconds_total", {"job_name": "fleet", "kind": "latency"}) == 5
    assert value("chronos_qos_violation_seconds_total", {"job_name": "fleet", "kind": "recovery"}) == 2.5
    assert value("chronos_qos_target_seconds", {"job_name": "fleet", "kind": "recovery"}) == 60
    assert value("chronos_latency_p99_seconds", {"job_name": "fleet"}) == 0.8
    assert value("chronos_checkpoint_interval_seconds", {"job_name": "fleet"}) == 10
    assert value("chronos_input_rate_events_per_second", {"job_name": "fleet"}) == 2100
    assert value("chronos_forecast_input_rate_events_per_second", {"job_name": "fleet"}) == 2500
    assert value("chronos_predicted_seconds", {"job_name": "fleet", "kind": "recovery"}) == 40
    assert value("chronos_recommended_interval_seconds", {"job_name": "fleet"}) == 20
    assert value("chronos_model_error_ratio", {"job_name": "fleet", "model": "recovery"}) == 0.12
    assert value("chronos_decisions_total", {"job_name": "fleet", "action": "retune"}) == 1
    assert value("chronos_retunes_total", {"job_name": "fleet", "outcome": "verified"}) == 1
    assert value("chronos_retune_downtime_seconds_count", {"job_name": "fleet"}) == 1
    assert value("chronos_retune_downtime_seconds_bucket", {"job_name": "fleet", "le": "4.0"}) == 1
    assert value("chronos_retune_downtime_seconds_bucket", {"job_name": "fleet", "le": "3.0"}) == 0
    assert value("chronos_failures_total", {"job_name": "fleet"}) == 1
    assert value("chronos_recovery_seconds", {"job_name": "fleet"}) == 35


def test_every_counter_a_dashboard_rates_exists_at_zero_from_the_start() -> None:
    registry = CollectorRegistry()
    TuneMetrics(registry).set_targets("fleet", 1.0, 60.0)
    value = registry.get_sample_value
    assert value("chronos_qos_violation_seconds_total", {"job_name": "fleet", "kind": "latency"}) == 0
    assert value("chronos_retunes_total", {"job_name": "fleet", "outcome": "verified"}) == 0
    assert value("chronos_decisions_total", {"job_name": "fleet", "action": "keep"}) == 0
    assert value("chronos_failures_total", {"job_name": "fleet"}) == 0
    assert value("chronos_retune_downtime_seconds_count", {"job_name": "fleet"}) == 0


def test_the_job_is_labelled_as_flinks_reporter_spells_it() -> None:
    from chronos.flink.prometheus_scrape import label_value
    from chronos.metrics.exporter import job_label

    registry = CollectorRegistry()
    TuneMetrics(registry).set_targets("chronos-vehicle stats.v2", 1.0, 60.0)
    assert job_label("chronos-vehicle stats.v2") == label_value("chronos-vehicle stats.v2") == "chronos_vehicle_stats_v2"
    assert registry.get_sample_value("chronos_qos_target_seconds",
                                     {"job_name": "chronos_vehicle_stats_v2", "kind": "latency"}) == 1.0


def test_two_tuners_in_one_process_do_not_collide() -> None:
    a, b = TuneMetrics(CollectorRegistry()), TuneMetrics(CollectorRegistry())
    a.failed("x", 1.0)
    assert b.registry.get_sample_value("chronos_failures_total", {"job_name": "x"}) is None


def test_the_samples_are_served_over_http_on_a_free_port() -> None:
    registry = CollectorRegistry()
    metrics = TuneMetrics(registry)
    metrics.retuned("fleet", "rolled-back", 5.0)
    server = serve(registry, 0)
    try:
        text = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5).text
    finally:
        server.close()
    assert 'chronos_retunes_total{job_name="fleet",outcome="rolled-back"} 1.0' in text
    assert "# TYPE chronos_retune_downtime_seconds histogram" in text


def test_healthz_is_ok_while_the_loop_steps_and_503_once_it_stalls() -> None:
    now = [1000.0]
    heartbeat = Heartbeat(stall_after_s=60, clock=lambda: now[0])
    server = serve(CollectorRegistry(), 0, heartbeat=heartbeat)
    try:
        url = f"http://127.0.0.1:{server.port}/healthz"
        assert httpx.get(url, timeout=5).status_code == 200, "starting is not stalling"
        now[0] += 50
        heartbeat.beat(now[0])
        now[0] += 59
        assert httpx.get(url, timeout=5).status_code == 200
        now[0] += 2
        stalled = httpx.get(url, timeout=5)
        assert stalled.status_code == 503 and "last step 61 s ago" in stalled.text
        assert httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5).status_code == 200, "metrics still served"
    finally:
        server.close()


def test_source_errors_are_counted_per_job_and_source_and_outages_shown_as_up_or_down() -> None:
    registry = CollectorRegistry()
    metrics = TuneMetrics(registry)
    metrics.set_targets("fleet", 1.0, 60.0)
    metrics.set_targets("orders", None, 60.0)
    assert registry.get_sample_value("chronos_collect_errors_total", {"job_name": "fleet", "source": "kafka"}) == 0
    metrics.source_errors("fleet", ["kafka", "kafka", "flink-rest"])
    metrics.source_up("fleet", "kafka", False)
    assert registry.get_sample_value("chronos_collect_errors_total", {"job_name": "fleet", "source": "kafka"}) == 2
    assert registry.get_sample_value("chronos_collect_errors_total", {"job_name": "fleet", "source": "flink-rest"}) == 1
    assert registry.get_sample_value("chronos_source_up", {"job_name": "fleet", "source": "kafka"}) == 0
    assert registry.get_sample_value("chronos_source_up", {"job_name": "fleet", "source": "reporter"}) == 1
    # one job's outage is its own: the other job of the same controller reads on
    assert registry.get_sample_value("chronos_source_up", {"job_name": "orders", "source": "kafka"}) == 1
    assert registry.get_sample_value("chronos_collect_errors_total", {"job_name": "orders", "source": "kafka"}) == 0


def test_pacing_figures_and_the_realizer_in_force_are_exported() -> None:
    registry = CollectorRegistry()
    metrics = TuneMetrics(registry)
    metrics.set_targets("fleet", 1.0, 60.0)
    metrics.set_realizer("fleet", "paced")
    value = registry.get_sample_value
    assert value("chronos_checkpoint_triggers_total", {"job_name": "fleet", "outcome": "skipped-in-flight"}) == 0
    assert value("chronos_decisions_total", {"job_name": "fleet", "action": "pace"}) == 0
    metrics.paced_at("fleet", 5.0)
    metrics.triggered("fleet", "completed")
    metrics.triggered("fleet", "failed")
    metrics.checkpoint_completed("fleet", 5.04, 0.04)
    metrics.checkpoint_completed("fleet", 9.0, None)  # across a cadence change: no pacing error
    assert value("chronos_realizer_info", {"job_name": "fleet", "realizer": "paced"}) == 1
    assert value("chronos_realizer_info", {"job_name": "fleet", "realizer": "restart"}) == 0
    assert value("chronos_paced_interval_seconds", {"job_name": "fleet"}) == 5.0
    assert value("chronos_effective_checkpoint_interval_seconds", {"job_name": "fleet"}) == 9.0
    assert value("chronos_checkpoint_triggers_total", {"job_name": "fleet", "outcome": "completed"}) == 1
    assert value("chronos_checkpoint_triggers_total", {"job_name": "fleet", "outcome": "failed"}) == 1
    assert value("chronos_pacing_error_seconds_count", {"job_name": "fleet"}) == 1
    assert value("chronos_pacing_error_seconds_bucket", {"job_name": "fleet", "le": "0.05"}) == 1


def test_what_the_last_decision_was_made_from_is_exported_as_its_mode() -> None:
    registry = CollectorRegistry()
    metrics = TuneMetrics(registry)
    metrics.decided("fleet", "retune", wanted_s=4, feasible=True, forecast_rate=2500, predicted_latency_s=None,
                    predicted_recovery_s=None, mode="cold-start")
    value = registry.get_sample_value
    assert value("chronos_decision_mode_info", {"job_name": "fleet", "mode": "cold-start"}) == 1
    assert value("chronos_decision_mode_info", {"job_name": "fleet", "mode": "models"}) == 0
    metrics.decided("fleet", "keep", wanted_s=4, feasible=True, forecast_rate=2500, predicted_latency_s=1,
                    predicted_recovery_s=30, mode="models")
    assert value("chronos_decision_mode_info", {"job_name": "fleet", "mode": "cold-start"}) == 0
    assert value("chronos_decision_mode_info", {"job_name": "fleet", "mode": "models"}) == 1


def test_the_metrics_are_an_observer_of_their_own_so_no_screen_stands_between_the_loop_and_them() -> None:
    """The loop's and the pacer's events reach the exporter through MetricsObserver alone (the terminal view is
    another observer beside it, chronos.cli.tune_view.TuneObservers)."""
    from chronos.metrics.tune_observer import MetricsObserver
    from chronos.model import CheckpointSettings, JobSpec
    from chronos.optimizer.evaluate import JobModels
    from chronos.tune.failures import ObservedFailure
    from chronos.tune.journal import Cadence
    from chronos.tune.outages import OutageEvent
    from chronos.tune.retune import TunedJob

    registry = CollectorRegistry()
    heartbeat = Heartbeat(stall_after_s=60, clock=lambda: 1_796_000_000.0)
    observer = MetricsObserver(TuneMetrics(registry), heartbeat)
    job = TunedJob("j1", JobSpec("fleet"), CheckpointSettings(30_000), paced_ms=5_000)
    observer.watching(job)
    observer.realizing(job, "paced", "Flink offers the trigger")
    observer.cadence("fleet", Cadence(1, "fleet", "j1", None, 5_000, 30_000, 1_000, 2_000, "the load rose"))
    observer.completed("fleet", 5.1, 0.1)
    observer.triggered("fleet", "completed")
    observer.failure(job, ObservedFailure(1_000, 5_000, 2_000.0, 31.0, 32_000), JobModels(None, None))
    observer.outage(job, OutageEvent("kafka", "began", "broker gone"))
    observer.stepped(1_796_000_000_000)
    value = registry.get_sample_value
    assert value("chronos_realizer_info", {"job_name": "fleet", "realizer": "paced"}) == 1
    assert value("chronos_paced_interval_seconds", {"job_name": "fleet"}) == 5
    assert value("chronos_effective_checkpoint_interval_seconds", {"job_name": "fleet"}) == 5.1
    assert value("chronos_checkpoint_triggers_total", {"job_name": "fleet", "outcome": "completed"}) == 1
    assert value("chronos_failures_total", {"job_name": "fleet"}) == 1
    assert value("chronos_recovery_seconds", {"job_name": "fleet"}) == 31
    assert value("chronos_source_up", {"job_name": "fleet", "source": "kafka"}) == 0
    assert value("chronos_loop_heartbeat_timestamp_seconds") == 1_796_000_000
    assert heartbeat.healthy()
