"""The decision core, specified with hand-built histories and models fitted to synthetic jobs whose
truth the test knows (the way the Flink autoscaler tests its evaluator: no REST client anywhere).

The synthetic job: recovery = 15 s + replay of interval x rate at 2,000 ev/s (grows with both);
p99 latency = 300 ms + 6,000 ms-s / interval (frequent checkpoints cost latency: an at-least-once job).
"""

from __future__ import annotations

import functools
import random

import pytest
from pydantic import ValidationError

from chronos.optimizer.decide import decide
from chronos.optimizer.evaluate import JobModels, TuneHistory, evaluate
from chronos.optimizer.models import Observation, fit_best
from chronos.optimizer.policy import TunePolicy
from tests.support.truths import latency_truth, recovery_truth


@functools.cache
def models() -> JobModels:
    rng = random.Random(7)
    grid = [(i, r) for i in (1, 2, 3, 5, 8, 12, 20, 30, 45, 60, 90, 120) for r in (1000, 2500, 5000, 8000)]
    recovery = [Observation(i, r, recovery_truth(i, r) * (1 + rng.gauss(0, 0.02))) for i, r in grid]
    latency = [Observation(i, r, latency_truth(i, r) * (1 + rng.gauss(0, 0.02))) for i, r in grid]
    return JobModels(fit_best(recovery, seed=0), fit_best(latency, seed=0))


def history(interval_s: float, rate: float, *, p99_ms: float | None = None, now: float = 10_000,
            started: float = 0.0, retunes: tuple[float, ...] = (), step_to: float | None = None) -> TuneHistory:
    rates = [rate] * 30 + ([step_to] * 6 if step_to is not None else [])
    return TuneHistory(
        interval_s=interval_s, rates=tuple(rates), rate_step_s=10.0,
        p99_ms=p99_ms if p99_ms is not None else latency_truth(interval_s, rates[-1]),
        checkpoint_costs_s=(0.4, 0.5, 0.6), observed_since_s=0.0, now_s=now, started_at_s=started,
        retunes_at_s=retunes,
    )


POLICY = TunePolicy(latency_p99_ms=1500, recovery_s=60, startup_grace_s=60, cooldown_s=300)


def test_a_load_increase_makes_it_shorten_the_interval_when_recovery_binds() -> None:
    before = decide(evaluate(history(30, 2000), models(), POLICY), history(30, 2000), POLICY, now_s=10_000)
    after = decide(evaluate(history(30, 2000, step_to=6000), models(), POLICY),
                   history(30, 2000, step_to=6000), POLICY, now_s=10_000)
    assert before.action == "keep", before.explain()
    assert after.action == "retune" and after.interval_s < 30, after.explain()
    assert after.binding == "recovery" and after.feasible
    assert after.forecast_rate >= 5000
    assert after.chosen is not None and after.chosen.recovery is not None
    assert recovery_truth(after.interval_s, 6000) <= 60, "the chosen interval really meets the target"
    assert after.current.failing() == ("recovery",)


def test_latency_binding_makes_it_lengthen_the_interval() -> None:
    decision = decide(evaluate(history(3, 2000), models(), POLICY), history(3, 2000), POLICY, now_s=10_000)
    assert decision.action == "retune" and decision.interval_s > 3, decision.explain()
    assert "latency" in decision.current.failing()
    assert latency_truth(decision.interval_s, 2000) <= 1500
    assert recovery_truth(decision.interval_s, 2000) <= 60


def test_it_picks_the_least_overhead_and_explains_with_the_numbers() -> None:
    decision = decide(evaluate(history(3, 2000), models(), POLICY), history(3, 2000), POLICY, now_s=10_000)
    evaluation = evaluate(history(3, 2000), models(), POLICY)
    longer = [c for c in evaluation.candidates if c.interval_s > decision.interval_s]
    assert longer and not longer[0].ok, "the next longer candidate misses a target: this is the longest that meets both"
    assert decision.chosen is not None and decision.chosen.overhead is not None
    assert decision.chosen.overhead < decision.current.overhead  # type: ignore[operator]
    text = decision.explain()
    for needle in ("retune", "recovery", "p99", "forecast", "binding recovery"):
        assert needle in text


def test_nothing_is_decided_in_the_startup_grace() -> None:
    decision = decide(evaluate(history(3, 2000, started=9_990), models(), POLICY),
                      history(3, 2000, started=9_990), POLICY, now_s=10_000)
    assert decision.action == "keep" and "startup grace" in decision.reason
    assert decision.wanted_s is not None and decision.wanted_s > 3


def test_cooldown_and_the_hourly_cap_hold() -> None:
    cooling = decide(evaluate(history(3, 2000, retunes=(9_900,)), models(), POLICY),
                     history(3, 2000, retunes=(9_900,)), POLICY, now_s=10_000)
    assert cooling.action == "keep" and "cooldown" in cooling.reason
    capped_policy = POLICY.model_copy(update={"max_retunes_per_hour": 2})
    capped = decide(evaluate(history(3, 2000, retunes=(7_000, 9_000)), models(), capped_policy),
                    history(3, 2000, retunes=(7_000, 9_000)), capped_policy,
                    now_s=10_000)
    assert capped.action == "keep" and "cap of 2" in capped.reason
    # no restarts at all (a job chronos has no program of): held, and said so rather than as a cap reached
    advise_only = POLICY.model_copy(update={"max_retunes_per_hour": 0})
    held = decide(evaluate(history(3, 2000), models(), advise_only), history(3, 2000), advise_only, now_s=10_000)
    assert held.action == "keep" and "restarts are off" in held.reason


def test_with_no_latency_target_the_recovery_target_alone_binds() -> None:
    policy = POLICY.model_copy(update={"latency_p99_ms": None})
    evaluation = evaluate(history(30, 2000), models(), policy)
    assert all(c.latency_ratio is None for c in evaluation.candidates) and not evaluation.latency_violated
    decision = decide(evaluation, history(30, 2000), policy, now_s=10_000)
    assert decision.binding in ("recovery", "none"), decision


def test_a_small_change_is_not_worth_a_retune() -> None:
    evaluation = evaluate(history(30, 2000), models(), POLICY)
    wanted = decide(evaluation, history(30, 2000), POLICY.model_copy(update={"min_change_rel": 0.0, "min_change_abs_s": 0.0}),
                    now_s=10_000).wanted_s
    assert wanted is not None
    near = decide(evaluate(history(wanted * 0.9, 2000), models(), POLICY), history(wanted * 0.9, 2000), POLICY, now_s=10_000)
    assert near.action == "keep" and "too small" in near.reason


def test_infeasible_targets_are_flagged_with_the_best_compromise() -> None:
    tight = TunePolicy(latency_p99_ms=400, recovery_s=16, startup_grace_s=0)
    decision = decide(evaluate(history(10, 5000), models(), tight), history(10, 5000), tight, now_s=10_000)
    assert not decision.feasible and "NO interval meets both targets" in decision.explain()
    assert decision.chosen is not None
    evaluation = evaluate(history(10, 5000), models(), tight)
    best = min(c.worst_ratio for c in evaluation.candidates)
    assert best <= decision.chosen.worst_ratio <= best + tight.compromise_tolerance
    assert all(c.overhead is None or decision.chosen.overhead is None or c.overhead >= decision.chosen.overhead
               for c in evaluation.candidates if c.worst_ratio <= best + tight.compromise_tolerance)


def test_a_target_no_interval_meets_is_not_chased_with_checkpoint_overhead() -> None:
    """Recovery 14 s is out of reach (15 s go to restarting whatever the interval): the shortest interval
    buys almost no predicted recovery for many times the checkpoint cost, so a cheaper near-equal one wins."""
    tight = TunePolicy(latency_p99_ms=5000, recovery_s=14, startup_grace_s=0)
    evaluation = evaluate(history(10, 5000), models(), tight)
    best = min(evaluation.candidates, key=lambda c: c.worst_ratio)
    decision = decide(evaluation, history(10, 5000), tight, now_s=10_000)
    assert decision.chosen is not None and not decision.feasible
    assert decision.chosen.interval_s > best.interval_s, decision.explain()
    exact = tight.model_copy(update={"compromise_tolerance": 0.0})
    assert decide(evaluate(history(10, 5000), models(), exact),
                  history(10, 5000), exact, now_s=10_000).wanted_s == best.interval_s


def test_latency_predictions_are_calibrated_to_the_live_job() -> None:
    slower = evaluate(history(10, 2000, p99_ms=2 * latency_truth(10, 2000)), models(), POLICY)
    assert slower.latency_calibration == pytest.approx(2.0, rel=0.1)
    assert slower.current.latency is not None and slower.current.latency.median == pytest.approx(
        2 * latency_truth(10, 2000), rel=0.1)


def test_baselines_are_strategies_of_their_own() -> None:
    static = TunePolicy(latency_p99_ms=1500, recovery_s=60, strategy="static", static_interval_s=60, startup_grace_s=0)
    assert decide(evaluate(history(10, 2000), models(), static), history(10, 2000), static, now_s=10_000).interval_s == 60
    young = TunePolicy(latency_p99_ms=1500, recovery_s=60, strategy="young", startup_grace_s=0)
    no_failures = decide(evaluate(history(10, 2000), models(), young), history(10, 2000), young, now_s=10_000)
    assert no_failures.action == "keep" and "MTBF unknown" in no_failures.reason
    failing = TuneHistory(**{**history(10, 2000).__dict__, "failures_at_s": (2_000.0, 7_000.0)})
    decision = decide(evaluate(failing, models(), young), failing, young, now_s=10_000)
    assert decision.wanted_s == pytest.approx((2 * 0.5 * 5_000) ** 0.5)  # sqrt(2 C M), C = median cost, M = 10,000 s / 2
    known = young.model_copy(update={"mtbf_s": 800.0})
    told = decide(evaluate(history(10, 2000), models(), known), history(10, 2000), known, now_s=10_000)
    assert told.wanted_s == pytest.approx((2 * 0.5 * 800) ** 0.5), "a known MTBF needs no failure seen first"


def test_with_only_a_recovery_model_latency_is_not_judged() -> None:
    evaluation = evaluate(history(10, 2000), JobModels(models().recovery, None), POLICY)
    assert all(c.latency is None and c.latency_ok for c in evaluation.candidates)
    decision = decide(evaluation, history(10, 2000), POLICY, now_s=10_000)
    assert decision.binding == "recovery" and recovery_truth(decision.interval_s, 2000) <= 60


def test_a_bad_policy_is_refused_by_field() -> None:
    with pytest.raises(ValidationError, match="interval_min_s"):
        TunePolicy(latency_p99_ms=1, recovery_s=1, interval_min_s=10, interval_max_s=5)
    with pytest.raises(ValidationError, match="static_interval_s"):
        TunePolicy(latency_p99_ms=1, recovery_s=1, strategy="static")
    with pytest.raises(ValidationError, match="recovery_s"):
        TunePolicy(latency_p99_ms=1, recovery_s=-1)


def test_overhead_comes_from_the_checkpoint_model_when_there_is_one() -> None:
    def cost(interval_s: float, rate: float) -> float:  # a checkpoint gets longer with the state it carries
        return 0.1 + interval_s * rate / 1e6

    points = [Observation(i, r, cost(i, r)) for i in (1, 2, 5, 10, 20, 60, 120) for r in (1000, 3000, 6000)]
    with_model = JobModels(models().recovery, models().latency, fit_best(points, seed=0))
    evaluation = evaluate(history(10, 3000), with_model, POLICY)
    for candidate in evaluation.candidates:
        assert candidate.overhead == pytest.approx(cost(candidate.interval_s, 3000) / candidate.interval_s, rel=0.1)
    live_only = evaluate(history(10, 3000), models(), POLICY)
    assert live_only.current.overhead == pytest.approx(0.5 / 10), "without a model: the live median over the interval"
    assert "checkpointing" in decide(evaluation, history(10, 3000), POLICY, now_s=10_000).explain()


KHAOS = TunePolicy(latency_p99_ms=1500, recovery_s=60, strategy="khaos", startup_grace_s=0, cooldown_s=0,
                   safety_margin=0.0, conservative=False, calibrate_latency=False, min_change_rel=0.0,
                   min_change_abs_s=5.0)


def test_khaos_balances_the_two_ratios_among_intervals_that_meet_both() -> None:
    evaluation = evaluate(history(30, 2000), models(), KHAOS)
    decision = decide(evaluation, history(30, 2000), KHAOS, now_s=10_000)
    assert decision.chosen is not None and decision.strategy == "khaos"

    def objective(c):  # type: ignore[no-untyped-def]
        lat, rec = c.latency_ratio, c.recovery_ratio
        return lat + rec + abs(lat - rec)

    feasible = [c for c in evaluation.candidates if c.latency_ratio < 1 and c.recovery_ratio < 1]
    assert decision.chosen.interval_s == min(feasible, key=objective).interval_s
    assert "khaos: latR" in decision.reason


def test_khaos_does_not_move_when_no_interval_meets_both_or_the_change_is_under_5_s() -> None:
    impossible = KHAOS.model_copy(update={"recovery_s": 16.0, "latency_p99_ms": 400.0})
    stuck = decide(evaluate(history(30, 8000), models(), impossible), history(30, 8000), impossible, now_s=10_000)
    assert stuck.action == "keep" and "no interval with both ratios below 1" in stuck.reason
    chosen = decide(evaluate(history(30, 2000), models(), KHAOS), history(30, 2000), KHAOS, now_s=10_000).interval_s
    near = decide(evaluate(history(chosen + 4, 2000), models(), KHAOS), history(chosen + 4, 2000), KHAOS, now_s=10_000)
    assert near.action == "keep", near.explain()


def test_a_latency_model_not_yet_scaled_to_the_live_job_decides_nothing() -> None:
    unseen = TuneHistory(**{**history(30, 2000).__dict__, "p99_ms": None})
    decision = decide(evaluate(unseen, models(), POLICY), unseen, POLICY, now_s=10_000)
    assert decision.action == "keep" and decision.wanted_s is None and "no p99 seen yet" in decision.reason
    raw = POLICY.model_copy(update={"calibrate_latency": False})
    assert decide(evaluate(unseen, models(), raw), unseen, raw, now_s=10_000).wanted_s is not None
