"""Before any model exists (no profile, fewer live failures than a fit needs), the tuner still decides, from
what the live job alone shows: Young's interval from the measured checkpoint cost and an MTBF (the failures
seen, else a default), bounded by what each target allows; every such decision says it is a cold start."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chronos.optimizer.cold_start import ColdStartInputs, cold_start
from chronos.optimizer.decide import decide
from chronos.optimizer.evaluate import JobModels, TuneHistory, evaluate
from chronos.optimizer.policy import TunePolicy
from tests.unit.test_optimizer_decisions import models

ROOMY = ColdStartInputs(checkpoint_cost_s=0.5, mtbf_s=None, default_mtbf_s=86_400, recoveries_s=(),
                        default_fixed_recovery_s=30, headroom=1.0, observed_p99_ms=None, current_interval_s=10,
                        latency_target_ms=600_000, recovery_target_s=3600, safety_margin=0.1, interval_min_s=1,
                        interval_max_s=600)


def test_with_loose_targets_it_runs_youngs_interval_from_the_checkpoint_cost_and_the_default_mtbf() -> None:
    choice = cold_start(ROOMY)
    assert choice.wanted_s == pytest.approx((2 * 0.5 * 86_400) ** 0.5, abs=0.5)
    assert choice.binding == "none" and "default MTBF 24 h" in choice.reason


def test_failures_seen_shorten_it_through_their_mtbf() -> None:
    assert cold_start(replace(ROOMY, mtbf_s=3600)).wanted_s == pytest.approx(60, abs=0.5)


def test_the_latency_target_bounds_it_by_an_interval_plus_the_checkpoint_an_exactly_once_output_waits_for() -> None:
    choice = cold_start(replace(ROOMY, latency_target_ms=5000))
    assert choice.wanted_s == pytest.approx(5 * 0.9 - 0.5) and choice.binding == "latency"
    # the observed p99 says how much more than the interval the job's output waits
    slow = cold_start(replace(ROOMY, latency_target_ms=5000, observed_p99_ms=12_000, current_interval_s=10))
    assert slow.wanted_s == pytest.approx(4.5 - 2.0)


def test_the_recovery_target_bounds_it_by_the_fixed_part_plus_one_interval_replayed_at_the_headroom() -> None:
    choice = cold_start(replace(ROOMY, recovery_target_s=60))
    assert choice.wanted_s == pytest.approx((54 - 30) * 1.0) and choice.binding == "recovery"
    assert "default: no recovery seen yet" in choice.reason
    measured = cold_start(replace(ROOMY, recovery_target_s=60, recoveries_s=(40.0, 44.0, 42.0), headroom=0.5))
    assert measured.wanted_s == pytest.approx((54 - 42) * 0.5) and "median of 3 recoveries seen" in measured.reason


def test_an_unreachable_target_gets_the_shortest_interval_and_says_so() -> None:
    choice = cold_start(replace(ROOMY, recovery_target_s=20))
    assert choice.wanted_s == 1 and "may miss the recovery target" in choice.reason


def test_without_a_measured_checkpoint_it_waits() -> None:
    choice = cold_start(replace(ROOMY, checkpoint_cost_s=None))
    assert choice.wanted_s is None and "no checkpoint measured yet" in choice.reason


POLICY = TunePolicy(latency_p99_ms=5000, recovery_s=60, startup_grace_s=60)


def live(interval_s: float, *, costs: tuple[float, ...] = (0.4, 0.5, 0.6)) -> TuneHistory:
    return TuneHistory(interval_s=interval_s, rates=(2000.0,) * 30, rate_step_s=10.0, p99_ms=None,
                       checkpoint_costs_s=costs, now_s=10_000)


def test_a_decision_without_models_is_a_cold_start_one_and_says_so() -> None:
    decision = decide(evaluate(live(30), JobModels(None, None), POLICY), live(30), POLICY, now_s=10_000)
    assert decision.mode == "cold-start" and decision.action == "retune", decision.explain()
    assert decision.interval_s == pytest.approx(5 * 0.9 - 0.5) and decision.reason.startswith("cold start")
    waiting = decide(evaluate(live(30, costs=()), JobModels(None, None), POLICY), live(30, costs=()), POLICY, now_s=10_000)
    assert waiting.mode == "cold-start" and waiting.action == "keep" and waiting.wanted_s is None


def test_with_models_decisions_use_them_and_baselines_say_they_are_baselines() -> None:
    assert decide(evaluate(live(30), models(), POLICY), live(30), POLICY, now_s=10_000).mode == "models"
    young = POLICY.model_copy(update={"strategy": "young", "mtbf_s": 3600})
    assert decide(evaluate(live(30), JobModels(None, None), young), live(30), young, now_s=10_000).mode == "baseline"


def test_khaos_without_models_does_not_move() -> None:
    khaos = POLICY.model_copy(update={"strategy": "khaos"})
    decision = decide(evaluate(live(30), JobModels(None, None), khaos), live(30), khaos, now_s=10_000)
    assert decision.action == "keep" and decision.wanted_s is None


def test_with_no_latency_target_only_young_and_the_recovery_target_bound_it() -> None:
    choice = cold_start(replace(ROOMY, latency_target_ms=None, recovery_target_s=60))
    assert choice.wanted_s == pytest.approx((60 * 0.9 - 30) * 1.0) and choice.binding == "recovery"
    assert "no latency target" in choice.reason and "latency target allows" not in choice.reason
