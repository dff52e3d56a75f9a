"""Decisions for a paced job (chronos triggers its checkpoints): a cadence change costs nothing, so it is
`pace`, free of cooldown and hourly cap; shortened at once, lengthened only as far as every decision of the
window wanted; the job's own interval is the fallback that must meet the recovery target without chronos, and
changing it is a restart, stabilized like any. The synthetic job of test_optimizer_decisions."""

from __future__ import annotations

from dataclasses import replace

from chronos.optimizer.decide import Decision, decide
from chronos.optimizer.evaluate import Evaluation, JobModels, TuneHistory, evaluate
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
    decision = decide(evaluate(h, models(), POLICY), h, POLICY, now_s=NOW)
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
    decision = decide(evaluate(h, models(), POLICY), h, POLICY, now_s=NOW)
    assert decision.action == "retune" and decision.fallback_s is not None, decision.explain()
    assert decision.fallback_s == evaluate(h, models(), POLICY).fallback_choice_s
    assert decision.fallback_s <= fallback_of(h) < 120, "chosen for a headroom over the load it must hold at"
    assert "would miss the recovery target without chronos" in decision.reason


def test_in_cooldown_the_fallback_restart_waits_but_the_cadence_still_follows() -> None:
    h = paced(30, 2000, configured_s=120, step_to=6000, retunes=(NOW - 10,))
    decision = decide(evaluate(h, models(), POLICY), h, POLICY, now_s=NOW)
    assert decision.action == "pace" and decision.interval_s < 30, decision.explain()
    assert "fallback restart" in decision.reason and "cooldown" in decision.reason


def test_a_cadence_is_lengthened_only_as_far_as_every_decision_of_the_window_wanted() -> None:
    h = paced(3, 2000, configured_s=120, wanted_recent=((NOW - 30, 8.0), (NOW - 90, 4.0)))
    wants = decide(evaluate(paced(3, 2000, configured_s=120), models(), POLICY),
                   paced(3, 2000, configured_s=120), POLICY, now_s=NOW).wanted_s
    assert wants is not None and wants > 8
    decision = decide(evaluate(h, models(), POLICY), h, POLICY, now_s=NOW)
    assert decision.interval_s == 8.0, decision.explain()  # the 4 s wish is older than the window
    assert "lengthening to 8 s" in decision.reason


def test_a_cadence_change_below_its_threshold_is_kept() -> None:
    policy = POLICY.model_copy(update={"strategy": "static", "static_interval_s": 5.2})
    decision = decide(evaluate(paced(5, 2000, configured_s=120), JobModels(None, None), policy),
                      paced(5, 2000, configured_s=120), policy, now_s=NOW)
    assert decision.action == "keep" and "too small" in decision.reason, decision.explain()


def test_a_cadence_longer_than_the_jobs_own_interval_needs_a_restart_of_it() -> None:
    policy = POLICY.model_copy(update={"strategy": "static", "static_interval_s": 20.0})
    decision = decide(evaluate(paced(5, 2000, configured_s=10), JobModels(None, None), policy),
                      paced(5, 2000, configured_s=10), policy, now_s=NOW)
    assert decision.action == "retune" and decision.fallback_s == 20.0 and decision.interval_s == 20.0
    assert "would cut a 20 s cadence short" in decision.reason


def test_without_models_a_paced_job_gets_the_cold_start_cadence_and_keeps_its_own_interval() -> None:
    decision = decide(evaluate(paced(5, 2000, configured_s=120), JobModels(None, None), POLICY),
                      paced(5, 2000, configured_s=120), POLICY, now_s=NOW)
    assert decision.mode == "cold-start" and decision.action == "pace", decision.explain()
    assert decision.fallback_s is None, "no recovery model to judge the fallback by: it is left as it is"


FOLLOW = POLICY.model_copy(update={"fallback_rule": "follow"})


def evaluated(h: TuneHistory, policy: TunePolicy = POLICY) -> Evaluation:
    return evaluate(h, models(), policy)


def decided(h: TuneHistory, policy: TunePolicy = POLICY) -> Decision:
    return decide(evaluated(h, policy), h, policy, now_s=NOW)


def choice_at(rate: float, policy: TunePolicy = POLICY) -> float:
    """The job's own interval a fallback restart sets once the load has reached `rate`."""
    choice = evaluated(replace(paced(10, rate, 10), rate_ceiling=rate), policy).fallback_choice_s
    assert choice is not None
    return choice


def test_a_rise_to_a_load_seen_before_moves_only_the_cadence() -> None:
    own = choice_at(6000)
    rising = replace(paced(30, 2000, configured_s=own, step_to=6000), rate_ceiling=6000)
    decision = decided(rising)
    assert decision.action == "pace" and decision.interval_s <= own, decision.explain()
    assert recovery_truth(own, 6000) <= 60, "the job's own interval holds the target at the highest load seen"


def test_under_the_follow_rule_the_same_rise_restarts_the_job() -> None:
    own = choice_at(2000, FOLLOW)
    rising = replace(paced(30, 2000, configured_s=own, step_to=6000), rate_ceiling=6000)
    decision = decided(rising, FOLLOW)
    assert decision.action == "retune" and decision.fallback_s is not None and decision.fallback_s < own


def test_a_rise_past_the_highest_load_seen_shortens_the_fallback_once_for_the_headroom() -> None:
    own = choice_at(2000)
    decision = decided(replace(paced(8, 2000, configured_s=own, step_to=4000), rate_ceiling=4000))
    assert decision.action == "retune" and decision.fallback_s is not None, decision.explain()
    assert decision.fallback_s < own and decision.interval_s <= decision.fallback_s
    assert "ev/s" in decision.reason and recovery_truth(decision.fallback_s, 4000 * 1.25) <= 60
    further = replace(paced(decision.interval_s, 4000, configured_s=decision.fallback_s, step_to=4900,
                            retunes=(NOW - 400,)), rate_ceiling=4900)
    assert decided(further).action != "retune", "within the headroom: no second restart"


def test_a_drop_of_the_load_does_not_lengthen_the_fallback_past_what_the_highest_load_allows() -> None:
    own = choice_at(6000)
    calm = replace(paced(own, 1000, configured_s=own), rate_ceiling=6000)
    decision = decided(calm)
    assert decision.wanted_s is not None and decision.wanted_s > own, "the calm load wants a longer cadence"
    assert decision.action == "keep" and decision.fallback_s is None, decision.explain()


def test_a_design_rate_chooses_the_fallback_once_at_adoption() -> None:
    policy = POLICY.model_copy(update={"fallback_design_rate": 6000.0})
    adopted = decided(paced(30, 1000, configured_s=120), policy)
    assert adopted.action == "retune" and adopted.fallback_s is not None, adopted.explain()
    assert recovery_truth(adopted.fallback_s, 6000) <= 60
    peak = replace(paced(adopted.interval_s, 1000, configured_s=adopted.fallback_s, step_to=6000,
                         retunes=(NOW - 400,)), rate_ceiling=6000)
    assert decided(peak, policy).action != "retune", "the peak it was chosen for"


def test_a_far_too_short_own_interval_is_lengthened_once_but_never_past_what_is_safe() -> None:
    calm = replace(paced(1, 1000, configured_s=1), rate_ceiling=6000)
    decision = decided(calm)
    limit = evaluated(calm).fallback_s
    assert decision.action == "retune" and decision.fallback_s is not None and limit is not None, decision.explain()
    assert 2 <= decision.fallback_s <= limit and "caps the cadence" in decision.reason


def test_an_own_interval_a_little_short_is_lengthened_only_when_latency_is_at_stake() -> None:
    limit = evaluated(replace(paced(5, 1000, 5), rate_ceiling=6000)).fallback_s
    assert limit is not None
    own = round(limit / 1.5, 1)
    calm = replace(paced(own, 1000, configured_s=own), rate_ceiling=6000)
    assert decided(calm).action == "keep"
    strained = replace(calm, p99_ms=POLICY.latency_p99_ms * 1.2)
    decision = decided(strained)
    assert decision.action == "retune" and "latency target is at stake" in decision.reason, decision.explain()


def test_a_paced_static_baseline_is_never_restarted_for_safety() -> None:
    static = POLICY.model_copy(update={"strategy": "static", "static_interval_s": 10.0})
    busy = replace(paced(10, 2000, configured_s=10, step_to=9000), rate_ceiling=9000)
    decision = decide(evaluate(busy, models(), static), busy, static, now_s=NOW)
    assert decision.action == "keep" and decision.fallback_s is None, decision.explain()


def test_a_recovery_target_out_of_reach_makes_the_fallback_the_compromise_not_the_shortest_interval() -> None:
    strict = POLICY.model_copy(update={"recovery_s": 5.0})
    evaluation = evaluate(replace(paced(10, 6000, 10), rate_ceiling=6000), models(), strict)
    assert not any(c.recovery_ok for c in evaluation.candidates)
    best = min(c.recovery_ratio or 0.0 for c in evaluation.candidates)
    assert evaluation.fallback_s is not None and evaluation.fallback_s > strict.interval_min_s
    judged = next(c for c in evaluation.candidates if c.interval_s == evaluation.fallback_s)
    assert (judged.recovery_ratio or 0.0) <= best * (1 + strict.compromise_tolerance)


def test_before_any_output_a_paced_job_is_paced_for_the_recovery_target_alone() -> None:
    """An exactly-once job shows output only once a checkpoint commits: until a p99 is seen the latency model
    cannot be scaled to the job, but the cadence (free to change) need not wait for it."""
    own = choice_at(6000)
    silent = replace(paced(3, 2000, configured_s=own, step_to=6000), p99_ms=None, rate_ceiling=6000)
    decision = decided(silent)
    assert decision.action == "pace" and decision.binding == "recovery", decision.explain()
    assert "recovery target alone" in decision.reason and recovery_truth(decision.interval_s, 6000) <= 60
    restarted = replace(silent, paced=False)
    assert decided(restarted).action == "keep", "a restart waits for the p99"


def test_a_recovery_target_out_of_reach_never_restarts_the_job_to_shorten_its_own_interval() -> None:
    """A busy side by side restarted the job twice for it (12 and 14 s of downtime, each right after a recovery):
    with no interval meeting the target at that load, a shorter fallback guarantees nothing."""
    strict = POLICY.model_copy(update={"recovery_s": 5.0})
    h = replace(paced(10, 6000, configured_s=120), rate_ceiling=6000)
    evaluation = evaluate(h, models(), strict)
    assert not evaluation.fallback_reachable and evaluation.fallback_s is not None and evaluation.fallback_s < 120
    decision = decide(evaluation, h, strict, now_s=NOW)
    assert decision.action == "pace" and decision.fallback_s is None, decision.explain()
    assert decision.interval_s < 10, "the cadence, free to change, still goes to the compromise"
    assert "guarantees nothing" in decision.reason and "6,000 ev/s" in decision.reason


def test_the_same_job_with_a_target_in_reach_is_restarted_to_a_fallback_that_meets_it() -> None:
    h = replace(paced(10, 6000, configured_s=120), rate_ceiling=6000)
    evaluation = evaluate(h, models(), POLICY)
    assert evaluation.fallback_reachable
    decision = decide(evaluation, h, POLICY, now_s=NOW)
    assert decision.action == "retune" and decision.fallback_s is not None, decision.explain()
    assert recovery_truth(decision.fallback_s, 6000) <= 60
