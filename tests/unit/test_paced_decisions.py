"""Decisions for a paced job (chronos triggers its checkpoints): a cadence change costs nothing, so it is
`pace`, free of cooldown and hourly cap; shortened at once, lengthened only as far as every decision of the
window wanted; the job's own interval is the fallback that must meet the recovery target without chronos, and
changing it is a restart, stabilized like any. The synthetic job of test_optimizer_decisions."""

from __future__ import annotations

from dataclasses import replace

from chronos.optimizer.decide import decide
from chronos.optimizer.evaluate import JobModels, TuneHistory, evaluate
from chronos.optimizer.policy import TunePolicy
from tests.support.truths import recovery_truth
from tests.unit.test_optimizer_decisions import history, models

POLICY = TunePolicy(latency_p99_ms=1500, recovery_s=60, startup_grace_s=60, cooldown_s=300)
NOW = 10_000.0


def paced(interval_s: float, rate: float, configured_s: float, **kwargs: object) -> TuneHistory:
    wanted = kwargs.pop("wanted_recent", ())
    return replace(history(interval_s, rate, **kwargs), paced=True, configured_s=configured_s,  # type: ignore[arg-type]
                   wanted_recent=wanted)  # type: ignore[arg-type]


def fallback_of(h: TuneHistory) -> float:
    fallback = evaluate(h, models(), POLICY).fallback_s
    assert fallback is not None
    return fallback


def test_a_load_step_shortens_the_cadence_without_a_restart_even_in_cooldown_and_past_the_cap() -> None:
    h = paced(30, 2000, configured_s=30, step_to=6000, retunes=(NOW - 10, NOW - 20, NOW - 30, NOW - 40))
    decision = decide(evaluate(h, models(), POLICY), POLICY, now_s=NOW)
    assert decision.action == "pace" and decision.interval_s < 30, decision.explain()
    assert decision.fallback_s is None
    assert recovery_truth(decision.interval_s, 6000) <= 60


def test_the_fallback_is_the_longest_interval_predicted_to_meet_recovery_at_the_forecast_peak() -> None:
    calm, busy = fallback_of(paced(10, 1000, 10)), fallback_of(paced(10, 6000, 10))
    assert busy < calm, "more load: more to replay, a shorter safe interval"
    assert recovery_truth(busy, 6000) <= 60
    assert fallback_of(paced(10, 2000, 10, step_to=6000)) < fallback_of(paced(10, 2000, 10)), "at the forecast peak"


def test_a_configured_interval_that_would_miss_recovery_without_chronos_is_restarted_to_the_fallback() -> None:
    h = paced(5, 6000, configured_s=120)
    decision = decide(evaluate(h, models(), POLICY), POLICY, now_s=NOW)
    assert decision.action == "retune" and decision.fallback_s is not None, decision.explain()
    assert decision.fallback_s == fallback_of(h) and decision.fallback_s < 120
    assert "would miss the recovery target without chronos" in decision.reason


def test_in_cooldown_the_fallback_restart_waits_but_the_cadence_still_follows() -> None:
    h = paced(30, 2000, configured_s=120, step_to=6000, retunes=(NOW - 10,))
    decision = decide(evaluate(h, models(), POLICY), POLICY, now_s=NOW)
    assert decision.action == "pace" and decision.interval_s < 30, decision.explain()
    assert "fallback restart" in decision.reason and "cooldown" in decision.reason


def test_a_cadence_is_lengthened_only_as_far_as_every_decision_of_the_window_wanted() -> None:
    h = paced(3, 2000, configured_s=120, wanted_recent=((NOW - 30, 8.0), (NOW - 90, 4.0)))
    wants = decide(evaluate(paced(3, 2000, configured_s=120), models(), POLICY), POLICY, now_s=NOW).wanted_s
    assert wants is not None and wants > 8
    decision = decide(evaluate(h, models(), POLICY), POLICY, now_s=NOW)
    assert decision.interval_s == 8.0, decision.explain()  # the 4 s wish is older than the window
    assert "lengthening to 8 s" in decision.reason


def test_a_cadence_change_below_its_threshold_is_kept() -> None:
    policy = POLICY.model_copy(update={"strategy": "static", "static_interval_s": 5.2})
    decision = decide(evaluate(paced(5, 2000, configured_s=120), JobModels(None, None), policy), policy, now_s=NOW)
    assert decision.action == "keep" and "too small" in decision.reason, decision.explain()


def test_a_cadence_longer_than_the_jobs_own_interval_needs_a_restart_of_it() -> None:
    policy = POLICY.model_copy(update={"strategy": "static", "static_interval_s": 20.0})
    decision = decide(evaluate(paced(5, 2000, configured_s=10), JobModels(None, None), policy), policy, now_s=NOW)
    assert decision.action == "retune" and decision.fallback_s == 20.0 and decision.interval_s == 20.0
    assert "would cut a 20 s cadence short" in decision.reason


def test_without_models_a_paced_job_gets_the_cold_start_cadence_and_keeps_its_own_interval() -> None:
    decision = decide(evaluate(paced(5, 2000, configured_s=120), JobModels(None, None), POLICY), POLICY, now_s=NOW)
    assert decision.mode == "cold-start" and decision.action == "pace", decision.explain()
    assert decision.fallback_s is None, "no recovery model to judge the fallback by: it is left as it is"
