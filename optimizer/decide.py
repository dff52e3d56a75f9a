"""decide(evaluation, policy, now) -> Decision: which interval to run, and whether to retune to it now.

Choice (strategy chronos): among the intervals whose predictions meet both targets with the margin,
the one with the least checkpoint overhead, i.e. the longest; if none meets both, the cheapest of those
whose worse ratio to its target is within the policy's tolerance of the least, flagged infeasible.
Baselines choose their own way (static, Young, Daly). Then stabilization, in this order: startup grace,
minimum change, cooldown, hourly cap; a retune costs seconds of downtime, so a better interval is not by
itself a reason to move. Every Decision explains itself with the numbers it was made from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chronos.optimizer.baselines import daly_interval_s, young_interval_s
from chronos.optimizer.evaluate import Assessment, Evaluation
from chronos.optimizer.policy import TunePolicy

Binding = Literal["recovery", "latency", "both", "none", "unknown"]


@dataclass(frozen=True)
class Decision:
    action: Literal["retune", "keep"]
    interval_s: float  # the interval to run: the target of a retune, the current one when kept
    wanted_s: float | None  # what the strategy would run, before stabilization; None: it cannot say
    reason: str
    feasible: bool  # some candidate meets both targets (always True for baselines)
    binding: Binding  # which target keeps the chosen interval from being longer
    current: Assessment
    chosen: Assessment | None
    forecast_rate: float
    forecast_method: str
    at_s: float
    strategy: str

    def explain(self) -> str:
        def describe(a: Assessment | None) -> str:
            if a is None:
                return "-"
            parts = [f"{a.interval_s:g} s"]
            if a.recovery:
                parts.append(f"recovery {a.recovery.median:.1f} s (<= {a.recovery.high:.1f})")
            if a.latency:
                parts.append(f"p99 {a.latency.median:,.0f} ms (<= {a.latency.high:,.0f})")
            if a.overhead is not None:
                parts.append(f"checkpointing {a.overhead:.1%} of the time")
            return ", ".join(parts)

        head = f"{self.action} {self.interval_s:g} s: {self.reason}"
        tail = (f"current {describe(self.current)}; chosen {describe(self.chosen)}; "
                f"forecast {self.forecast_rate:,.0f} ev/s ({self.forecast_method}); binding {self.binding}")
        return head + " | " + tail + ("" if self.feasible else " | NO interval meets both targets")


def _binding(chosen: Assessment, candidates: tuple[Assessment, ...]) -> Binding:
    longer = [c for c in candidates if c.interval_s > chosen.interval_s]
    if not longer:
        return "none"
    failing = longer[0].failing()
    if not failing:
        return "none"  # a longer interval would meet both too: overhead, not a target, decided
    return "both" if len(failing) == 2 else failing[0]  # type: ignore[return-value]


def _choose(evaluation: Evaluation, policy: TunePolicy) -> tuple[Assessment | None, float | None, bool, Binding, str]:
    """(chosen assessment, wanted interval, feasible, binding, why) before stabilization."""
    candidates = evaluation.candidates
    if policy.strategy == "static":
        wanted = float(policy.static_interval_s or evaluation.current.interval_s)
        return None, wanted, True, "none", "static interval"
    if policy.strategy in ("young", "daly"):
        cost, mtbf = evaluation.checkpoint_cost_s, evaluation.mtbf_s
        if cost is None or mtbf is None:
            missing = "no failure seen yet, MTBF unknown" if mtbf is None else "no checkpoint cost measured"
            return None, None, True, "unknown", f"{policy.strategy}: {missing}"
        formula = young_interval_s if policy.strategy == "young" else daly_interval_s
        wanted = min(policy.interval_max_s, max(policy.interval_min_s, formula(cost, mtbf)))
        return None, wanted, True, "none", f"{policy.strategy}: checkpoint cost {cost:.2f} s, MTBF {mtbf:,.0f} s"
    if evaluation.current.recovery is None and evaluation.current.latency is None:
        return None, None, True, "unknown", "no models yet: run `chronos profile run`, or let live failures teach it"
    if policy.calibrate_latency and evaluation.current.latency is not None and evaluation.observed_p99_ms is None:
        # A profile's latency is scaled to the live job before it is believed (its cluster, its load are not
        # this one's); until the first output shows, the raw profile would decide, 4x off on the bench's job.
        return None, None, True, "unknown", "no p99 seen yet to scale the latency model to this job"
    if policy.strategy == "khaos":
        return _khaos(candidates)
    feasible = [c for c in candidates if c.ok]
    if feasible:
        # Least overhead; without any cost figure (or on a tie) the longest interval, which is the same
        # thing whenever a checkpoint's cost does not grow faster than its interval.
        chosen = min(feasible, key=lambda c: (c.overhead if c.overhead is not None else 0.0, -c.interval_s))
        binding = _binding(chosen, candidates)
        return chosen, chosen.interval_s, True, binding, "least checkpoint overhead meeting both targets"
    best = min(c.worst_ratio for c in candidates)
    near = [c for c in candidates if c.worst_ratio <= best + policy.compromise_tolerance]
    chosen = min(near, key=lambda c: (c.overhead if c.overhead is not None else 0.0, -c.interval_s))
    rec, lat = chosen.recovery_ratio or 0.0, chosen.latency_ratio or 0.0
    binding = "recovery" if rec > lat else "latency"
    return chosen, chosen.interval_s, False, binding, "best compromise: no interval meets both targets"


def _khaos(candidates: tuple[Assessment, ...]) -> tuple[Assessment | None, float | None, bool, Binding, str]:
    """Khaos (FedCSIS 2022): among intervals whose predicted latency and recovery both stay under their
    targets (ratios < 1), the least latR + recR + |latR - recR|: balanced use of both budgets. With no
    such interval it does not move."""
    def ratios(c: Assessment) -> tuple[float, float]:
        return c.latency_ratio or 0.0, c.recovery_ratio or 0.0

    feasible = [c for c in candidates if max(ratios(c)) < 1.0]
    if not feasible:
        return None, None, False, "unknown", "khaos: no interval with both ratios below 1"
    chosen = min(feasible, key=lambda c: (sum(ratios(c)) + abs(ratios(c)[0] - ratios(c)[1]), -c.interval_s))
    lat, rec = ratios(chosen)
    return chosen, chosen.interval_s, True, _binding(chosen, candidates), \
        f"khaos: latR {lat:.2f} + recR {rec:.2f} + |diff| = {lat + rec + abs(lat - rec):.2f}, least"


def decide(evaluation: Evaluation, policy: TunePolicy, now_s: float) -> Decision:
    chosen, wanted, feasible, binding, why = _choose(evaluation, policy)
    current = evaluation.current

    def keep(reason: str) -> Decision:
        return Decision("keep", current.interval_s, wanted, reason, feasible, binding, current, chosen,
                        evaluation.forecast.peak, evaluation.forecast.method, now_s, policy.strategy)

    if wanted is None:
        return keep(why)
    since_start = now_s - evaluation.started_at_s
    if since_start < policy.startup_grace_s:
        return keep(f"startup grace: {policy.startup_grace_s - since_start:.0f} s left (wants {wanted:g} s)")
    change = abs(wanted - current.interval_s)
    if change == 0:
        return keep(f"{why}; already there")
    if change < max(policy.min_change_abs_s, policy.min_change_rel * current.interval_s):
        return keep(f"{why}; change to {wanted:g} s too small")
    recent = [t for t in evaluation.retunes_at_s if t <= now_s]
    if recent and now_s - max(recent) < policy.cooldown_s:
        return keep(f"cooldown: {policy.cooldown_s - (now_s - max(recent)):.0f} s left (wants {wanted:g} s)")
    if sum(1 for t in recent if now_s - t < 3600) >= policy.max_retunes_per_hour:
        return keep(f"cap of {policy.max_retunes_per_hour} retunes per hour reached (wants {wanted:g} s)")
    return Decision("retune", wanted, wanted, why, feasible, binding, current, chosen,
                    evaluation.forecast.peak, evaluation.forecast.method, now_s, policy.strategy)
