"""decide(evaluation, history, policy, now) -> Decision: which interval to run, and whether to retune to it now.

The evaluation says what each interval would do; the history (the same value evaluate got) says what stabilization
needs: when the job started, its recent restarts and decisions, whether it is paced, the recoveries seen.

Choice (strategy chronos): among the intervals whose predictions meet both targets with the margin,
the one with the least checkpoint overhead, i.e. the longest; if none meets both, the cheapest of those
whose worse ratio to its target is within the policy's tolerance of the least, flagged infeasible. Only
intervals near those the models were fitted on are candidates (evaluate's `choice_range_s`): a model flat
where it was measured says nothing about ten times further out, and "cheapest" would pick the far end.
Baselines choose their own way (static, Young, Daly). Then stabilization, in this order: startup grace,
minimum change, cooldown, hourly cap; a retune costs seconds of downtime, so a better interval is not by
itself a reason to move. Every Decision explains itself with the numbers it was made from.

A paced job (chronos triggers its checkpoints) changes cadence for free: the action is `pace`, with no
cooldown and no cap; it is shortened at once and lengthened only as far as every decision of the last
`lengthen_after_s` wanted (the autoscaler's scale-down stabilization window, for the same reason: the risky
direction waits). Its own configured interval is the fallback that must hold the recovery target without
chronos, and changing it is a restart (stabilized like any). Under the policy's ceiling rule (the default) it
must hold at the highest load seen, not the forecast: a quick side by side restarted the job at
every rise of the load to move it (5.5 s of downtime each, more QoS-violation seconds than a static interval
gained), whereas a load swing seen before is safe at the fallback already. When it must shorten it is set for
a headroom over that load, so that the next rise does not restart again at once; it is lengthened (it caps the
cadence: Flink's timer would cut a longer one short) only when the latency target is at stake at it or the
cadence wanted is far longer. What this costs in safety: nothing at any load up to the highest seen; a load
beyond it, with chronos dead before its next decision, is met by an interval chosen for a lower one.
Nor is it shortened when no interval meets the recovery target at that load: the restart would buy no
guarantee, only a sliver of predicted recovery, for certain downtime (a busy side-by-side arm restarted twice
for it, 12 and 14 s, each just after a recovery, at 85 % of the job's capacity). What this costs in safety:
with chronos dead at such a load, the job recovers at its own interval instead of the compromise, both late.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from chronos.optimizer.baselines import daly_interval_s, young_interval_s
from chronos.optimizer.cold_start import ColdStartInputs, cold_start
from chronos.optimizer.evaluate import Assessment, Evaluation, TuneHistory, near_least_recovery
from chronos.optimizer.policy import TunePolicy

Binding = Literal["recovery", "latency", "both", "none", "unknown"]
Mode = Literal["models", "cold-start", "baseline"]  # what the decision was made from


@dataclass(frozen=True)
class Decision:
    action: Literal["retune", "pace", "keep"]  # retune: a restart; pace: a paced job's new cadence, no restart
    interval_s: float  # the interval to run: the target of a retune or cadence change, the current one when kept
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
    fallback_s: float | None = None  # a paced job's configured interval to restart with (retune only)
    mode: Mode = "models"

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
        if self.fallback_s is not None:
            head = f"{self.action} to fallback {self.fallback_s:g} s, paced at {self.interval_s:g} s: {self.reason}"
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


def _choose(evaluation: Evaluation, history: TuneHistory,
            policy: TunePolicy) -> tuple[Assessment | None, float | None, bool, Binding, str]:
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
    if not evaluation.has_models:
        if policy.strategy == "khaos":
            return None, None, True, "unknown", "khaos: no models yet: run `chronos profile run`"
        choice = cold_start(_cold_inputs(evaluation, history, policy))
        return None, choice.wanted_s, True, choice.binding, choice.reason
    if policy.calibrate_latency and evaluation.current.latency is not None and evaluation.observed_p99_ms is None:
        # A profile's latency is scaled to the live job before it is believed (its cluster, its load are not
        # this one's); until the first output shows, the raw profile would decide, 4x off on the bench's job.
        # An exactly-once job shows no output before its first checkpoint commits (30 s at a 30 s interval): a
        # paced job, whose cadence changes cost nothing, is meanwhile paced for the recovery target alone.
        if history.paced and evaluation.current.recovery is not None and policy.strategy == "chronos":
            return _recovery_alone(candidates, policy)
        return None, None, True, "unknown", "no p99 seen yet to scale the latency model to this job"
    if policy.strategy == "khaos":
        return _khaos(candidates)
    feasible = [c for c in candidates if c.ok]
    if feasible:
        chosen = _cheapest(feasible)
        binding = _binding(chosen, candidates)
        return chosen, chosen.interval_s, True, binding, "least checkpoint overhead meeting both targets"
    best = min(c.worst_ratio for c in candidates)
    near = [c for c in candidates if c.worst_ratio <= best + policy.compromise_tolerance]
    chosen = _cheapest(near)
    rec, lat = chosen.recovery_ratio or 0.0, chosen.latency_ratio or 0.0
    binding = "recovery" if rec > lat else "latency"
    return chosen, chosen.interval_s, False, binding, "best compromise: no interval meets both targets"


def _recovery_alone(candidates: tuple[Assessment, ...],
                    policy: TunePolicy) -> tuple[Assessment | None, float | None, bool, Binding, str]:
    """The choice with the latency model set aside: the cheapest interval meeting the recovery target, else the
    cheapest of those near the least predicted recovery (the rule the fallback follows too)."""
    why = "no p99 seen yet to scale the latency model: paced for the recovery target alone"
    ok = [c for c in candidates if c.recovery_ok]
    if ok:
        chosen = _cheapest(ok)
        return chosen, chosen.interval_s, True, "recovery", why
    chosen = _cheapest(near_least_recovery(candidates, policy.compromise_tolerance))
    return chosen, chosen.interval_s, False, "recovery", f"{why} (none meets it: the best compromise)"


def _cheapest(candidates: Sequence[Assessment]) -> Assessment:
    """Least checkpoint overhead; without any cost figure (or on a tie) the longest interval, which is the same
    thing whenever a checkpoint's cost does not grow faster than its interval."""
    return min(candidates, key=lambda c: (c.overhead if c.overhead is not None else 0.0, -c.interval_s))


def _cold_inputs(evaluation: Evaluation, history: TuneHistory, policy: TunePolicy) -> ColdStartInputs:
    return ColdStartInputs(
        checkpoint_cost_s=evaluation.checkpoint_cost_s, mtbf_s=evaluation.mtbf_s, default_mtbf_s=policy.cold_mtbf_s,
        recoveries_s=history.recoveries_s, default_fixed_recovery_s=policy.cold_fixed_recovery_s,
        headroom=policy.cold_headroom, observed_p99_ms=evaluation.observed_p99_ms,
        current_interval_s=evaluation.current.interval_s, latency_target_ms=policy.latency_p99_ms,
        recovery_target_s=policy.recovery_s, safety_margin=policy.safety_margin, interval_min_s=policy.interval_min_s,
        interval_max_s=policy.interval_max_s)


def mode_of(evaluation: Evaluation, policy: TunePolicy) -> Mode:
    if policy.strategy in ("static", "young", "daly"):
        return "baseline"
    return "models" if evaluation.has_models else "cold-start"


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


def decide(evaluation: Evaluation, history: TuneHistory, policy: TunePolicy, now_s: float) -> Decision:
    chosen, wanted, feasible, binding, why = _choose(evaluation, history, policy)
    limited = evaluation.choice_range_s
    if chosen is not None and limited is not None and evaluation.models_range_s is not None \
            and (limited[0] > policy.interval_min_s or limited[1] < policy.interval_max_s):
        measured = evaluation.models_range_s
        why = (f"{why}; chosen within {limited[0]:g}-{limited[1]:g} s ({policy.extrapolation_factor:g}x the "
               f"{measured[0]:g}-{measured[1]:g} s its models were measured at)")
    current = evaluation.current
    mode = mode_of(evaluation, policy)

    def keep(reason: str) -> Decision:
        return Decision("keep", current.interval_s, wanted, reason, feasible, binding, current, chosen,
                        evaluation.forecast.peak, evaluation.forecast.method, now_s, policy.strategy, mode=mode)

    if wanted is None:
        return keep(why)
    since_start = now_s - history.started_at_s
    if since_start < policy.startup_grace_s:
        return keep(f"startup grace: {policy.startup_grace_s - since_start:.0f} s left (wants {wanted:g} s)")
    if history.paced:
        return _paced(evaluation, history, policy, now_s, wanted, why, keep,
                      lambda action, interval, fallback, reason: Decision(
                          action, interval, wanted, reason, feasible, binding, current, chosen, evaluation.forecast.peak,
                          evaluation.forecast.method, now_s, policy.strategy, fallback, mode))
    change = abs(wanted - current.interval_s)
    if change == 0:
        return keep(f"{why}; already there")
    if change < max(policy.min_change_abs_s, policy.min_change_rel * current.interval_s):
        return keep(f"{why}; change to {wanted:g} s too small")
    held = _restart_held(history, policy, now_s)
    if held is not None:
        return keep(f"{held} (wants {wanted:g} s)")
    return Decision("retune", wanted, wanted, why, feasible, binding, current, chosen,
                    evaluation.forecast.peak, evaluation.forecast.method, now_s, policy.strategy, mode=mode)


def _restart_held(history: TuneHistory, policy: TunePolicy, now_s: float) -> str | None:
    """Why a restart must wait (cooldown, hourly cap), or None."""
    if policy.max_retunes_per_hour == 0:
        return "restarts are off (0 retunes per hour)"
    recent = [t for t in history.retunes_at_s if t <= now_s]
    if recent and now_s - max(recent) < policy.cooldown_s:
        return f"cooldown: {policy.cooldown_s - (now_s - max(recent)):.0f} s left"
    if sum(1 for t in recent if now_s - t < 3600) >= policy.max_retunes_per_hour:
        return f"cap of {policy.max_retunes_per_hour} retunes per hour reached"
    return None


def _paced(evaluation: Evaluation, history: TuneHistory, policy: TunePolicy, now_s: float, wanted: float, why: str,
           keep: Callable[[str], Decision], make: Callable[[Literal["retune", "pace"], float, float | None, str], Decision],
           ) -> Decision:
    current = evaluation.current.interval_s
    configured = history.configured_s if history.configured_s is not None else current
    target = wanted
    if wanted > current:  # lengthen only as far as every decision of the window wanted
        window = [w for at, w in history.wanted_recent if now_s - at <= policy.lengthen_after_s]
        target = max(current, min([wanted, *window]))
        if target < wanted:
            why = f"{why}; lengthening to {target:g} s, what every decision of the last {policy.lengthen_after_s:g} s wanted"
    restart = _fallback_restart(evaluation, policy, configured, target)
    if restart is not None:
        new_configured, because = restart
        if abs(new_configured - configured) >= max(policy.min_change_abs_s, policy.min_change_rel * configured):
            held = _restart_held(history, policy, now_s) or _no_guarantee(evaluation, configured, new_configured)
            if held is None:
                return make("retune", min(target, new_configured), new_configured,
                            f"{why}; fallback to {new_configured:g} s: {because}")
            why = f"{why}; fallback restart to {new_configured:g} s held: {held}"
    target = min(target, configured)  # beyond its own interval only after a restart
    change = abs(target - current)
    if change == 0:
        return keep(f"{why}; already there")
    if change < max(policy.cadence_min_change_abs_s, policy.cadence_min_change_rel * current):
        return keep(f"{why}; cadence change to {target:g} s too small")
    return make("pace", target, None, why)


def _no_guarantee(evaluation: Evaluation, configured: float, new_configured: float) -> str | None:
    """Why a fallback that would shorten is not worth its restart: no interval meets the recovery target at the
    load the fallback must hold at, so a shorter one guarantees nothing if chronos dies (it only trims a predicted
    recovery that misses anyway), while the restart's downtime and catch-up are certain, and at such a load long."""
    if new_configured >= configured or evaluation.fallback_reachable:
        return None
    at = f" at {evaluation.fallback_rate:,.0f} ev/s" if evaluation.fallback_rate is not None else ""
    return (f"no interval meets the recovery target{at}, so a shorter own interval guarantees nothing without "
            "chronos, and a restart costs downtime and catch-up for certain")


def _fallback_restart(evaluation: Evaluation, policy: TunePolicy, configured: float,
                      target: float) -> tuple[float, str] | None:
    """Whether the job's own interval must change (a restart), to what, and why; None: the cadence alone moves.
    A baseline's (static, Young/Daly) only when it cuts the interval it asks for short: no model judges it, and a
    static arm restarted for safety is no longer static. Otherwise shorter when it would miss the recovery target
    without chronos at the load it must hold at (`fallback_s`); longer when it cuts the cadence wanted short: for a
    model-based strategy under the ceiling rule only when the latency target is at stake at it or the
    cadence wanted is `fallback_lengthen_factor` times longer, and never past what is safe."""
    if mode_of(evaluation, policy) == "baseline":  # its interval is the point; no model judges it (a user's static)
        return (target, f"its own {configured:g} s would cut a {target:g} s cadence short") if target > configured else None
    limit, choice = evaluation.fallback_s, evaluation.fallback_choice_s
    ceiling = policy.fallback_rule == "ceiling"
    at = f" at {evaluation.fallback_rate:,.0f} ev/s" if ceiling and evaluation.fallback_rate is not None else ""
    if limit is not None and configured > limit:
        because = f"the job's own {configured:g} s would miss the recovery target without chronos{at}"
        return (choice if choice is not None else limit), because
    if target <= configured:
        return None
    if not ceiling:
        return max(limit if limit is not None else configured, target), \
            f"its own {configured:g} s would cut a {target:g} s cadence short"
    longest = target if limit is None else min(target, limit)
    judged = evaluation.configured
    at_stake = evaluation.latency_violated or (judged is not None and not judged.latency_ok)
    if longest <= configured or not (at_stake or longest >= policy.fallback_lengthen_factor * configured):
        return None
    because = ("the latency target is at stake at it" if at_stake
               else f"a {target:g} s cadence is wanted, {longest / configured:.1f}x its own")
    return longest, f"its own {configured:g} s caps the cadence and {because}"
