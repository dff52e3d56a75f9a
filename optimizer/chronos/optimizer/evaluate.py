"""evaluate(history, models, policy) -> Evaluation: what every candidate interval would do under the
load that is coming, judged against the targets. Pure: the live numbers arrive as a value, the
models as fitted objects; nothing here reads a clock, a socket or a file.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from chronos.optimizer.baselines import estimate_mtbf_s
from chronos.optimizer.forecast import RateForecast, forecast_rate
from chronos.optimizer.model_values import Model, Prediction
from chronos.optimizer.policy import TunePolicy


@dataclass(frozen=True)
class TuneHistory:
    """The live job as the collector saw it, and the tuner's own record of it. `evaluate` judges the readings;
    `decide` stabilizes with the record (when the job started, its restarts, the decisions' wanted intervals,
    whether it is paced, the recoveries seen). Times are seconds on the caller's clock (the same one `decide` gets
    as `now`)."""

    interval_s: float  # in force now: the paced cadence of a paced job, else the job's configured interval
    rates: tuple[float, ...]  # input rate readings, `rate_step_s` apart, newest last
    rate_step_s: float
    p99_ms: float | None  # observed over the policy's latency window; None: no output seen
    checkpoint_costs_s: tuple[float, ...] = ()  # recent completed checkpoint durations
    failures_at_s: tuple[float, ...] = ()  # failures of the live job seen while observing
    observed_since_s: float = 0.0
    now_s: float = 0.0  # when this history was taken (for the MTBF; decide gets its own now)
    started_at_s: float = 0.0  # when the job last (re)started: start of chronos's watch or the last retune
    retunes_at_s: tuple[float, ...] = ()
    paced: bool = False  # chronos triggers the job's checkpoints: a cadence change needs no restart
    configured_s: float | None = None  # a paced job's own interval, its fallback (None: = interval_s)
    wanted_recent: tuple[tuple[float, float], ...] = ()  # (at, wanted interval) of the recent decisions
    recoveries_s: tuple[float, ...] = ()  # recoveries measured on the live job (its failures, a probe)
    rate_ceiling: float | None = None  # the highest input rate seen since tuning began (beyond `rates`' window)


@dataclass(frozen=True)
class JobModels:
    """Fitted models of the job; None when there is nothing to fit one from yet. `checkpoint` predicts
    a checkpoint's duration (s): with it the overhead of an interval is its own, not today's."""

    recovery: Model | None
    latency: Model | None
    checkpoint: Model | None = None


@dataclass(frozen=True)
class Assessment:
    """One interval under the forecast load: predictions, and whether each target holds with the margin.
    A target with no model to judge it holds by default (`recovery`/`latency` is then None)."""

    interval_s: float
    recovery: Prediction | None
    latency: Prediction | None
    recovery_ratio: float | None  # judged prediction / (target x (1 - margin)); <= 1 meets it
    latency_ratio: float | None
    overhead: float | None  # share of time spent checkpointing: checkpoint cost / interval

    @property
    def recovery_ok(self) -> bool:
        return self.recovery_ratio is None or self.recovery_ratio <= 1.0

    @property
    def latency_ok(self) -> bool:
        return self.latency_ratio is None or self.latency_ratio <= 1.0

    @property
    def ok(self) -> bool:
        return self.recovery_ok and self.latency_ok

    @property
    def worst_ratio(self) -> float:
        return max((r for r in (self.recovery_ratio, self.latency_ratio) if r is not None), default=0.0)

    def failing(self) -> tuple[str, ...]:
        return tuple(name for name, ok in (("recovery", self.recovery_ok), ("latency", self.latency_ok)) if not ok)


@dataclass(frozen=True)
class Evaluation:
    current: Assessment
    # Shortest interval first; the current one among them unless it lies outside `choice_range_s`.
    candidates: tuple[Assessment, ...]
    forecast: RateForecast
    observed_rate: float
    observed_p99_ms: float | None
    latency_violated: bool  # observed, not predicted
    latency_calibration: float  # factor applied to the latency model (1.0: none)
    checkpoint_cost_s: float | None
    mtbf_s: float | None
    recovery_model_mape: float | None
    latency_model_mape: float | None
    # A paced job's own interval: `fallback_s`, the longest predicted to meet the recovery target at
    # `fallback_rate` (longer is unsafe); `fallback_choice_s`, what a restart that must shorten it sets (at the
    # policy's headroom over that rate); `configured`, the job's own interval judged at the decision's load.
    fallback_s: float | None = None
    fallback_choice_s: float | None = None
    fallback_rate: float | None = None
    fallback_reachable: bool = True  # some candidate meets the recovery target at `fallback_rate`
    configured: Assessment | None = None
    # (shortest, longest) the candidates were limited to: the models' measured intervals, widened by the policy's
    # extrapolation factor; with `models_range_s`, what the models were fitted on. None: the policy's whole range.
    choice_range_s: tuple[float, float] | None = None
    models_range_s: tuple[float, float] | None = None

    @property
    def has_models(self) -> bool:
        return self.current.recovery is not None or self.current.latency is not None


def candidate_intervals(policy: TunePolicy, current_s: float,
                        within: tuple[float, float] | None = None) -> tuple[float, ...]:
    """The policy's log-spaced grid and the current interval; `within` (shortest, longest): only the grid's points
    in it, its two ends, and the current interval only if it is inside."""
    lo, hi = math.log(policy.interval_min_s), math.log(policy.interval_max_s)
    grid = {round(math.exp(lo + i * (hi - lo) / (policy.candidates - 1)), 1) for i in range(policy.candidates)}
    if within is None:
        return tuple(sorted(grid | {round(current_s, 3)}))
    low, high = within
    kept = {i for i in grid | {round(current_s, 3)} if low <= i <= high} | {round(low, 1), round(high, 1)}
    return tuple(sorted(kept))


def models_range_s(models: JobModels) -> tuple[float, float] | None:
    """The intervals the recovery and latency models were both fitted on (either's, where they do not overlap);
    None when neither says."""
    ranges = [m.report.intervals_s for m in (models.recovery, models.latency)
              if m is not None and m.report.intervals_s is not None]
    if not ranges:
        return None
    low, high = max(r[0] for r in ranges), min(r[1] for r in ranges)
    return (low, high) if low <= high else (min(r[0] for r in ranges), max(r[1] for r in ranges))


def choice_range_s(measured: tuple[float, float] | None, policy: TunePolicy) -> tuple[float, float] | None:
    """What strategy chronos may choose from: the measured range widened by the extrapolation factor, inside the
    policy's bounds. Baselines judge the policy's whole range, as they were published; so does a model that does not
    say where it was measured."""
    if measured is None or policy.strategy != "chronos":
        return None
    f = policy.extrapolation_factor
    low = min(policy.interval_max_s, max(policy.interval_min_s, measured[0] / f))
    high = max(low, min(policy.interval_max_s, measured[1] * f))
    return round(low, 1), round(high, 1)


def _judged(prediction: Prediction, policy: TunePolicy) -> float:
    return prediction.high if policy.conservative else prediction.median


def _scaled(prediction: Prediction, factor: float) -> Prediction:
    return Prediction(prediction.median * factor, prediction.low * factor, prediction.high * factor)


def _overhead(interval_s: float, rate: float, models: JobModels, live_cost_s: float | None) -> float | None:
    """Share of time spent checkpointing at this interval: the modelled checkpoint duration at this
    interval and rate if there is a model, else the live job's recent median, over the interval."""
    cost = models.checkpoint.predict(interval_s, rate).median if models.checkpoint else live_cost_s
    return max(0.0, cost) / interval_s if cost else None


def _assess(interval_s: float, rate: float, models: JobModels, policy: TunePolicy, calibration: float,
            cost_s: float | None) -> Assessment:
    recovery = models.recovery.predict(interval_s, rate) if models.recovery else None
    latency = _scaled(models.latency.predict(interval_s, rate), calibration) if models.latency else None
    budget = 1.0 - policy.safety_margin
    return Assessment(
        interval_s=interval_s,
        recovery=recovery,
        latency=latency,
        recovery_ratio=_judged(recovery, policy) / (policy.recovery_s * budget) if recovery else None,
        latency_ratio=_judged(latency, policy) / (policy.latency_p99_ms * budget)
        if latency and policy.latency_p99_ms is not None else None,
        overhead=_overhead(interval_s, rate, models, cost_s),
    )


def evaluate(history: TuneHistory, models: JobModels, policy: TunePolicy) -> Evaluation:
    if not history.rates:
        raise ValueError("no input rate readings yet")
    forecast = forecast_rate(history.rates, history.rate_step_s, policy.horizon_s)
    observed_rate = history.rates[-1]
    calibration = 1.0
    if policy.calibrate_latency and models.latency and history.p99_ms:
        predicted_now = models.latency.predict(history.interval_s, observed_rate).median
        if predicted_now > 0:
            calibration = min(4.0, max(0.25, history.p99_ms / predicted_now))
    cost = statistics.median(history.checkpoint_costs_s) if history.checkpoint_costs_s else None
    rate = max(forecast.peak, observed_rate)
    measured = models_range_s(models)
    within = choice_range_s(measured, policy)
    intervals = candidate_intervals(policy, history.interval_s, within)
    candidates = tuple(_assess(i, rate, models, policy, calibration, cost) for i in intervals)
    current = next((c for c in candidates if c.interval_s == round(history.interval_s, 3)), None) \
        or _assess(round(history.interval_s, 3), rate, models, policy, calibration, cost)
    observed_s = history.now_s - history.observed_since_s
    configured_s = history.interval_s if history.configured_s is None else history.configured_s
    fallback_rate, choice_rate = _fallback_rates(rate, history.rate_ceiling, policy)

    def assessed_at(at_rate: float) -> tuple[Assessment, ...]:
        return candidates if at_rate == rate else tuple(
            _assess(i, at_rate, models, policy, calibration, cost) for i in intervals)
    at_fallback = assessed_at(fallback_rate)
    return Evaluation(
        current=current,
        candidates=candidates,
        forecast=forecast,
        observed_rate=observed_rate,
        observed_p99_ms=history.p99_ms,
        latency_violated=(history.p99_ms is not None and policy.latency_p99_ms is not None
                          and history.p99_ms > policy.latency_p99_ms),
        latency_calibration=calibration,
        checkpoint_cost_s=cost,
        mtbf_s=policy.mtbf_s or (estimate_mtbf_s([t - history.observed_since_s for t in history.failures_at_s],
                                                 observed_s) if observed_s > 0 else None),
        recovery_model_mape=models.recovery.report.held_out_mape if models.recovery else None,
        latency_model_mape=models.latency.report.held_out_mape if models.latency else None,
        fallback_s=_fallback_s(at_fallback, policy.compromise_tolerance),
        fallback_choice_s=_fallback_s(assessed_at(choice_rate), policy.compromise_tolerance),
        fallback_rate=fallback_rate,
        fallback_reachable=any(c.recovery_ok for c in at_fallback),
        configured=_assess(configured_s, rate, models, policy, calibration, cost) if history.paced else None,
        choice_range_s=within,
        models_range_s=measured,
    )


def near_least_recovery(candidates: tuple[Assessment, ...], tolerance: float) -> tuple[Assessment, ...]:
    """When no interval meets the recovery target: those whose predicted recovery is within `tolerance` (a share) of
    the least. A share, not the decision's absolute margin on ratios: out of reach, ratios run far above 1 and an
    absolute 0.1 would leave only the shortest interval."""
    best = min(c.recovery_ratio or 0.0 for c in candidates)
    return tuple(c for c in candidates if (c.recovery_ratio or 0.0) <= best * (1 + tolerance))


def _fallback_rates(rate: float, ceiling: float | None, policy: TunePolicy) -> tuple[float, float]:
    """(rate the job's own interval must hold at, rate a shortened one is chosen for). follow: the forecast
    peak, both. ceiling: the highest rate seen or forecast, or the design rate when higher; a shortened one for
    the headroom over it (a hysteresis: the next restart waits until the load passes what this one covered)."""
    if policy.fallback_rule == "follow":
        return rate, rate
    limit = max(rate, ceiling or 0.0, policy.fallback_design_rate or 0.0)
    return limit, max(limit * policy.fallback_headroom, policy.fallback_design_rate or 0.0)


def _fallback_s(candidates: tuple[Assessment, ...], tolerance: float) -> float | None:
    """What a paced job's own interval may be: the longest candidate still predicted to meet the recovery
    target (with the margin) at the candidates' rate, so that it stays within it when chronos is gone. None without
    a recovery model (nothing to say it by). When none meets it: the longest of `near_least_recovery`, not the
    shortest: a target out of reach at any interval is no reason to checkpoint at the shortest one whenever chronos
    is gone (a quick side by side had Flink's timer at 2 s for a sliver of predicted recovery)."""
    judged = [c for c in candidates if c.recovery is not None]
    if not judged:
        return None
    if not any(c.recovery_ok for c in judged):
        return max(c.interval_s for c in near_least_recovery(tuple(judged), tolerance))
    longest = judged[0].interval_s
    for c in judged:  # shortest first: up to the first that misses it (a model need not be monotone)
        if not c.recovery_ok:
            break
        longest = c.interval_s
    return longest
