"""How bench/profile_trust.py judges a profile against the profile-trust goals: each verdict reads one figure, and a model
as good as the repeats allow is not failed for the repeats' own scatter."""

from __future__ import annotations

from chronos.benchmarks.profile_trust import ModelTrust, ProfileTrust, judge, pooled_coverage, table
from chronos.optimizer.model_trust import at_noise_floor


def model(what: str = "recovery", error: float = 0.2, floor: float | None = None,
          covered: float | None = 0.8) -> ModelTrust:
    return ModelTrust(what, "phases", error, 8, floor, at_noise_floor(error, floor), 0.8, covered)


def profile(*models: ModelTrust, wall_s: float = 540, p99_change: float | None = 0.02,
            missing: tuple[str, ...] = ()) -> ProfileTrust:
    return ProfileTrust("job", wall_s, 6, 0, 1, p99_change, -0.01, 0.0, models, missing)


def verdict(trust: ProfileTrust, what: str) -> bool | None:
    return {v.what: v.met for v in judge(trust)}[what]


def test_a_profile_within_ten_minutes_and_leaving_the_live_p99_within_five_percent_meets_both() -> None:
    assert verdict(profile(), "wall time") is True and verdict(profile(), "live p99") is True
    assert verdict(profile(wall_s=601), "wall time") is False
    assert verdict(profile(p99_change=0.051), "live p99") is False
    assert verdict(profile(p99_change=-0.3), "live p99") is True, "a live job faster during the profile is not harmed"
    assert verdict(profile(p99_change=None), "live p99") is None, "not read: not measured, not met"


def test_an_error_above_a_quarter_meets_the_goal_only_at_the_noise_floor() -> None:
    assert verdict(profile(model(error=0.25)), "recovery error") is True
    assert verdict(profile(model(error=0.4)), "recovery error") is False, "floor unknown"
    assert verdict(profile(model(error=0.4, floor=0.36)), "recovery error") is True, "within 5 points of the floor"
    assert verdict(profile(model(error=0.4, floor=0.3)), "recovery error") is False


def test_intervals_must_cover_what_they_claim_give_or_take_five_points() -> None:
    assert verdict(profile(model(covered=0.75)), "recovery coverage") is True
    assert verdict(profile(model(covered=0.9)), "recovery coverage") is False, "too wide is not trusted either"
    assert verdict(profile(model(covered=0.6)), "recovery coverage") is False
    assert verdict(profile(model(covered=None)), "recovery coverage") is None


def test_a_model_the_profile_had_too_few_points_for_fails_and_every_verdict_is_a_row() -> None:
    trust = profile(model(), missing=("p99",))
    assert verdict(trust, "p99 model") is False
    rows = table(judge(trust)).splitlines()
    assert len(rows) == 2 + len(judge(trust)) and "NOT MET" in rows[-1] and "too few points" in rows[-1]


def test_a_coverage_verdict_says_when_no_count_of_its_points_could_meet_the_goal() -> None:
    from chronos.benchmarks.profile_trust import within_reach

    assert within_reach(6, 0.75, 0.85) and within_reach(20, 0.75, 0.85)
    assert not within_reach(7, 0.75, 0.85) and not within_reach(0, 0.75, 0.85)


def test_coverage_is_also_judged_over_every_profile_s_points_together() -> None:
    """4 of 6 (67 %) and 5 of 5 (100 %) miss the goal one by one; with 5 of 6 and 4 of 5 the 22 points hold 18 (82 %)."""
    six, five = (lambda c: ModelTrust("recovery", "phases", 0.2, 6, None, False, 0.8, c)), \
        (lambda c: ModelTrust("recovery", "linear", 0.2, 5, None, False, 0.8, c))
    trusts = [profile(six(4 / 6)), profile(five(1.0)), profile(six(5 / 6)), profile(five(0.8))]
    pooled = pooled_coverage(trusts)
    assert [(v.job, v.what, v.met) for v in pooled] == [("all", "recovery coverage, pooled", True)]
    assert pooled[0].said.startswith("18 of 22 held-out points inside their 80 % intervals (82%) over 4 profiles")
    assert pooled_coverage([profile(six(4 / 6))])[0].met is False
    assert pooled_coverage([profile(missing=("p99",))]) == ()
