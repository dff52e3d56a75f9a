"""Whether a profile can be trusted (the profile-trust goals), judged from what a profile run and its report say: pure,
so the bench that measures and the tests that pin the rules read the same lines.

The goals: the profile ends within PROFILE_GOAL_S; the live job's p99 while copies ran is within LIVE_P99_GOAL of
before; each model's held-out error is at most ERROR_GOAL or at its repeat-noise floor (chronos.optimizer.model_trust:
within 5 points of it, judged by the caller: benchmarks sit beside the optimizer, not above it), whichever is larger;
its 80 % intervals cover COVERAGE_GOAL held out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PROFILE_GOAL_S = 600.0
LIVE_P99_GOAL = 0.05
ERROR_GOAL = 0.25
COVERAGE_GOAL = (0.75, 0.85)


@dataclass(frozen=True)
class ModelTrust:
    """One fitted model as `chronos profile report --models --json` says it."""

    what: str  # recovery | p99
    family: str
    held_out_mape: float
    observations: int
    noise_floor_mape: float | None
    at_floor: bool  # its error within 5 points of the floor (chronos.optimizer.model_trust.at_noise_floor)
    coverage: float
    held_out_coverage: float | None


@dataclass(frozen=True)
class ProfileTrust:
    job: str
    wall_s: float
    runs: int
    failed: int
    parallel: int | None
    p99_change: float | None  # the live job's median p99 while copies ran over before, minus 1
    throughput_change: float | None
    paused_s: float
    models: tuple[ModelTrust, ...]
    missing: tuple[str, ...] = ()  # models the profile had too few points for


@dataclass(frozen=True)
class Verdict:
    job: str
    what: str
    met: bool | None  # None: not measurable (said why)
    said: str


def _pct(value: float) -> str:
    return f"{value:.0%}"


def judge(trust: ProfileTrust) -> tuple[Verdict, ...]:
    """Every goal's verdict for one profile, each saying the figure it read."""
    job = trust.job
    verdicts = [Verdict(job, "wall time", trust.wall_s <= PROFILE_GOAL_S,
                        f"{trust.wall_s / 60:.1f} min for {trust.runs} runs ({trust.failed} failed), goal "
                        f"{PROFILE_GOAL_S / 60:g} min")]
    if trust.p99_change is None:
        verdicts.append(Verdict(job, "live p99", None, "the live job's p99 was not read before and during"))
    else:
        verdicts.append(Verdict(job, "live p99", trust.p99_change <= LIVE_P99_GOAL,
                                f"{trust.p99_change:+.1%} while copies ran (goal at most +{LIVE_P99_GOAL:.0%}); "
                                f"throughput {'-' if trust.throughput_change is None else f'{trust.throughput_change:+.1%}'}"
                                f"; copies held back {trust.paused_s:.0f} s"))
    for model in trust.models:
        verdicts.extend(_model_verdicts(job, model))
    verdicts.extend(Verdict(job, f"{what} model", False, "too few points for a model") for what in trust.missing)
    return tuple(verdicts)


def within_reach(points: int, low: float, high: float) -> bool:
    """Whether any share k/points lies in [low, high]: on 7 points none lies in 75-85 % (5/7 is 71 %, 6/7 86 %),
    so a coverage verdict on so few says more about the count than about the intervals."""
    return any(low <= k / points <= high for k in range(points + 1)) if points > 0 else False


def _model_verdicts(job: str, m: ModelTrust) -> tuple[Verdict, Verdict]:
    floor = "unknown floor (no setting measured twice)" if m.noise_floor_mape is None else \
        f"noise floor {_pct(m.noise_floor_mape)}"
    met = m.held_out_mape <= ERROR_GOAL or m.at_floor
    error = Verdict(job, f"{m.what} error", met,
                    f"{m.family} {_pct(m.held_out_mape)} held out on {m.observations} points, {floor} (goal at most "
                    f"{_pct(ERROR_GOAL)} or within 5 points of the floor)")
    low, high = COVERAGE_GOAL
    if m.held_out_coverage is None:
        coverage = Verdict(job, f"{m.what} coverage", None, "too few points to check its intervals")
    else:
        n = m.observations
        reachable = "" if within_reach(n, low, high) else \
            f"; on {n} points no share lies in the goal: {n - 1} of {n} is {_pct((n - 1) / n)}"
        coverage = Verdict(job, f"{m.what} coverage", low <= m.held_out_coverage <= high,
                           f"its {_pct(m.coverage)} intervals covered {_pct(m.held_out_coverage)} held out "
                           f"({round(m.held_out_coverage * n)} of {n} points; goal {_pct(low)}-{_pct(high)}{reachable})")
    return error, coverage


def pooled_coverage(trusts: Sequence[ProfileTrust]) -> tuple[Verdict, ...]:
    """The coverage goal judged over every profile's held-out points together, a verdict per model kind: the goal is
    a property of how intervals are drawn, and on one profile's 5-6 points it is a coin toss (k of 6 lies in 75-85 %
    for k = 5 only, which 80 % intervals give with chance 0.39); pooled over four profiles' ~20 points it says
    something, though a 20-point share still moves 5 points with each point."""
    verdicts = []
    for what in ("recovery", "p99"):
        judged = [m for t in trusts for m in t.models if m.what == what and m.held_out_coverage is not None]
        if not judged:
            continue
        counted = [(round((m.held_out_coverage or 0.0) * m.observations), m.observations) for m in judged]
        covered, points = sum(c for c, _ in counted), sum(n for _, n in counted)
        claimed = "/".join(sorted({f"{m.coverage * 100:g} %" for m in judged}))
        low, high = COVERAGE_GOAL
        verdicts.append(Verdict("all", f"{what} coverage, pooled", low <= covered / points <= high,
                                f"{covered} of {points} held-out points inside their {claimed} intervals "
                                f"({_pct(covered / points)}) over {len(counted)} profiles; goal {_pct(low)}-{_pct(high)}"))
    return tuple(verdicts)


def table(verdicts: Sequence[Verdict]) -> str:
    """The verdicts as a markdown table, a row each."""
    word = {True: "MET", False: "NOT MET", None: "not measured"}
    rows = ["| job | goal | verdict | measured |", "|---|---|---|---|"]
    rows += [f"| {v.job} | {v.what} | {word[v.met]} | {v.said} |" for v in verdicts]
    return "\n".join(rows)
