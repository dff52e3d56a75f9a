"""Strategy chronos chooses among intervals near those its models were fitted on, not where a model's family
shape alone speaks. The busy side by side: a profile measured at 2-20 s, recovery and p99 flat there
(the copies ran at a fraction of the live job's load), no interval meeting the recovery target at the peak; the
"cheapest near the best compromise" was then the policy's far end, 120 s, and the live job recovered in
122-171 s against a 52.5 s target, its exactly-once output 75-268 s late.
"""

from __future__ import annotations

import functools
import random

from chronos.optimizer.decide import decide
from chronos.optimizer.evaluate import JobModels, TuneHistory, evaluate
from chronos.optimizer.models import Observation, fit_best
from chronos.optimizer.policy import TunePolicy

PROFILED = (2.0, 3.0, 4.0, 15.0, 20.0)  # the busy profile's intervals
RATES = (7_600.0, 11_900.0, 16_150.0)


@functools.cache  # a fit takes seconds: one per profile, shared by the specifications
def flat_models(intervals: tuple[float, ...] = PROFILED) -> JobModels:
    """Recovery grows with the load only (50 s at the middle rate), p99 ~18 s: flat in the interval, as measured."""
    rng = random.Random(3)
    points = [(i, r) for i in intervals for r in RATES]
    recovery = [Observation(i, r, (20 + 2.5e-3 * r) * (1 + rng.gauss(0, 0.02))) for i, r in points]
    latency = [Observation(i, r, 18_000 * (1 + rng.gauss(0, 0.02))) for i, r in points]
    return JobModels(fit_best(recovery, seed=0), fit_best(latency, seed=0))


def history(interval_s: float, rate: float) -> TuneHistory:
    return TuneHistory(interval_s=interval_s, rates=(rate,) * 30, rate_step_s=10.0, p99_ms=18_000.0,
                       checkpoint_costs_s=(0.15,), observed_since_s=0.0, now_s=10_000, started_at_s=0.0, paced=False)


BUSY = TunePolicy(latency_p99_ms=19_500, recovery_s=52.5, startup_grace_s=60, cooldown_s=120)


def test_a_model_knows_the_intervals_it_was_fitted_on() -> None:
    assert flat_models().recovery.report.intervals_s == (2.0, 20.0)  # type: ignore[union-attr]


def test_with_no_interval_meeting_the_target_the_compromise_stays_near_what_was_measured() -> None:
    evaluation = evaluate(history(10, 16_150), flat_models(), BUSY)
    decision = decide(evaluation, history(10, 16_150), BUSY, now_s=10_000)
    assert not decision.feasible, decision.explain()
    assert decision.interval_s <= 30, f"20 s measured, x1.5 at most: {decision.explain()}"
    assert max(c.interval_s for c in evaluation.candidates) == 30
    assert "chosen within 1.3-30 s (1.5x the 2-20 s its models were measured at)" in decision.reason


def test_an_interval_outside_the_measured_range_is_judged_but_never_a_candidate() -> None:
    evaluation = evaluate(history(120, 16_150), flat_models(), BUSY)
    assert evaluation.current.interval_s == 120 and evaluation.current.recovery is not None
    assert all(c.interval_s <= 30 for c in evaluation.candidates)
    decision = decide(evaluation, history(120, 16_150), BUSY, now_s=10_000)
    assert decision.action == "retune" and decision.interval_s <= 30, decision.explain()


def test_recoveries_measured_further_out_widen_the_range() -> None:
    wide = flat_models((2.0, 4.0, 15.0, 60.0))
    evaluation = evaluate(history(10, 16_150), wide, BUSY)
    assert evaluation.models_range_s == (2.0, 60.0) and max(c.interval_s for c in evaluation.candidates) == 90


def test_baselines_judge_the_whole_range_as_they_were_published() -> None:
    khaos = BUSY.model_copy(update={"strategy": "khaos"})
    evaluation = evaluate(history(10, 7_600), flat_models(), khaos)
    assert evaluation.choice_range_s is None and max(c.interval_s for c in evaluation.candidates) == 120


def test_a_large_factor_turns_the_limit_off() -> None:
    free = BUSY.model_copy(update={"extrapolation_factor": 1000})
    evaluation = evaluate(history(10, 16_150), flat_models(), free)
    assert max(c.interval_s for c in evaluation.candidates) == 120
