"""What of an asked run still fits a profile's budget: the run as asked, its steady window alone, or the same at the
longest shorter interval that fits.

The study asks for runs across the whole interval range (a Latin-hypercube start, then TPE), and a run at a long
interval costs minutes: two checkpoints to settle and a window longer than an interval. A shop profile's fourth design
point (a long interval) did not fit the 105 s its budget had left, so the profile ended at 8.6 of its 10 minutes with
three runs and no latency model, when a run at a shorter interval would have fitted: its point is worth more to the
models than the minutes left unused. The longest interval that fits keeps the point as near the asked one as the
budget allows. Pure: the caller passes the time left and its pace factor (chronos.profiler.profile.pace_factor).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chronos.profiler.run import RunPlan


@dataclass(frozen=True)
class FittedRun:
    interval_s: int
    plan: RunPlan
    why: str  # empty when the run is as asked; else what was changed, for the user


def fit_to_budget(plan: RunPlan, interval_s: int, number: int, *, left_s: float | None, factor: float,
                  copy_running: bool, interval_min_s: int) -> FittedRun | None:
    """In order of preference: as asked; its steady window alone (no faults) at the asked interval; with its faults
    at the longest shorter interval that fits; its window alone at the longest shorter interval. None: nothing fits."""
    if left_s is None:
        return FittedRun(interval_s, plan, "")
    quiet = replace(plan, faults=0, repeats=0)

    def fits(p: RunPlan, at_s: int) -> bool:
        return p.estimate_s(at_s, number, copy_running=copy_running) * factor <= left_s

    if fits(plan, interval_s):
        return FittedRun(interval_s, plan, "")
    if plan.faults and fits(quiet, interval_s):
        return FittedRun(interval_s, quiet, "its faults no longer fit the budget: its steady window only")
    for candidate in (plan, quiet) if plan.faults else (plan,):
        shorter = next((s for s in range(interval_s - 1, interval_min_s - 1, -1) if fits(candidate, s)), None)
        if shorter is not None:
            alone = ", its steady window only" if plan.faults and not candidate.faults else ""
            return FittedRun(shorter, candidate,
                             f"the asked {interval_s} s interval no longer fits the budget: {shorter} s{alone}")
    return None
