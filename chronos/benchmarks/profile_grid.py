"""What a profile says of every static interval across a scenario's loads: the side by side's best
static interval and its busy targets are read off the bench's own profile, and the report shows the grid they
came from. The grid is the models' median prediction at each (interval, rate); an interval "meets"
a target at a rate when the prediction is within it. Values in, values out: the models are passed in as
functions so that a test can give it any shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Predict = Callable[[float, float], float | None]  # (interval_s, rate) -> predicted seconds, None without a model


@dataclass(frozen=True)
class GridPoint:
    interval_s: float
    rate: float
    recovery_s: float | None
    p99_s: float | None

    def meets(self, latency_target_s: float, recovery_target_s: float) -> bool | None:
        """Both targets met at this point; None when a model is missing (not known, not "no")."""
        if self.recovery_s is None or self.p99_s is None:
            return None
        return self.recovery_s <= recovery_target_s and self.p99_s <= latency_target_s


@dataclass(frozen=True)
class StaticVerdict:
    interval_s: float
    rates_met: int  # of the scenario's rates, how many this interval meets both targets at
    rates: int
    targets_met: int = 0  # of the (rate, target) pairs, how many it meets: the tie-break when no rate has both
    excess: float = 0.0  # summed over the rates: how far past each target the prediction goes, as a share of it

    @property
    def always(self) -> bool:
        return self.rates_met == self.rates


def grid(recovery: Predict, p99: Predict, intervals_s: Sequence[float], rates: Sequence[float]) -> tuple[GridPoint, ...]:
    return tuple(GridPoint(i, r, recovery(i, r), p99(i, r)) for i in intervals_s for r in rates)


def static_verdicts(points: Sequence[GridPoint], latency_target_s: float,
                    recovery_target_s: float) -> tuple[StaticVerdict, ...]:
    """Per interval: at how many of the rates it meets both targets."""
    intervals = sorted({p.interval_s for p in points})
    verdicts = []
    for i in intervals:
        at = [p for p in points if p.interval_s == i]
        pairs = [(p.recovery_s, recovery_target_s) for p in at] + [(p.p99_s, latency_target_s) for p in at]
        known = [(v, t) for v, t in pairs if v is not None]
        verdicts.append(StaticVerdict(i, sum(p.meets(latency_target_s, recovery_target_s) is True for p in at), len(at),
                                      sum(v <= t for v, t in known), sum(max(0.0, v / t - 1) for v, t in known)))
    return tuple(verdicts)


def best_static(verdicts: Sequence[StaticVerdict]) -> float:
    """The static interval the profile recommends for the whole scenario: the one meeting both targets at the
    most rates; among equals the one meeting either target most often, then the one missing them by least, then
    the longest (it checkpoints least). Without the tie-breaks a target no interval meets (a p99 model predicting
    26 s everywhere against 25 s) made every interval equal and the longest, 60 s, "best"."""
    if not verdicts:
        raise ValueError("no intervals to choose from")
    return max(verdicts, key=lambda v: (v.rates_met, v.targets_met, -round(v.excess, 6), v.interval_s)).interval_s


def adaptive_meets_all(points: Sequence[GridPoint], latency_target_s: float, recovery_target_s: float) -> bool:
    """At every rate some interval meets both targets (not necessarily the same one)."""
    rates = sorted({p.rate for p in points})
    return all(any(p.meets(latency_target_s, recovery_target_s) is True for p in points if p.rate == r)
               for r in rates)


@dataclass(frozen=True)
class Targets:
    latency_s: float
    recovery_s: float
    longest_s: tuple[tuple[float, float], ...]  # per rate, the longest interval meeting both
    static_always: float | None  # the longest single interval meeting both at every rate, if any
    why: str


SPREAD = 2.0  # the trough's longest good interval at least this many times the peak's: room for an adaptive choice


def longest_meeting(points: Sequence[GridPoint], rate: float, latency_target_s: float,
                    recovery_target_s: float) -> float | None:
    met = [p.interval_s for p in points if p.rate == rate and p.meets(latency_target_s, recovery_target_s) is True]
    return max(met) if met else None


def suggest_targets(points: Sequence[GridPoint]) -> Targets | None:
    """The loosest pair of targets (candidates: the grid's own predictions, rounded up to 0.5 s) under which every
    rate has an interval meeting both and the longest such interval at the lightest rate is at least SPREAD times
    the one at the heaviest: an interval that follows the load can checkpoint less off-peak than any static one
    that is safe at the peak. Where recovery and p99 both worsen with the load, whatever the peak meets is met at
    every lighter rate, so a static interval meeting both always exists (`static_always`) and the contest is its
    checkpoint time: the verdict reads off the static frontier. None when the profile leaves no such room."""
    rates = sorted({p.rate for p in points})
    lat = sorted({_up(p.p99_s) for p in points if p.p99_s is not None}, reverse=True)
    rec = sorted({_up(p.recovery_s) for p in points if p.recovery_s is not None}, reverse=True)
    if not rates or not lat or not rec:
        return None
    pairs = sorted(((la, re) for la in lat for re in rec), key=lambda x: -(x[0] / lat[0] + x[1] / rec[0]))
    for la, re in pairs:
        longest = [longest_meeting(points, r, la, re) for r in rates]
        if any(x is None for x in longest):
            continue
        spans = [x for x in longest if x is not None]
        if spans[0] < SPREAD * spans[-1]:
            continue
        always = [v.interval_s for v in static_verdicts(points, la, re) if v.always]
        static = max(always) if always else None
        return Targets(la, re, tuple(zip(rates, spans, strict=True)), static,
                       f"p99 <= {la:g} s and recovery <= {re:g} s: the longest interval meeting both is "
                       f"{spans[0]:g} s at {rates[0]:,.0f} ev/s and {spans[-1]:g} s at {rates[-1]:,.0f} ev/s; "
                       + (f"the longest static interval meeting both at every rate is {static:g} s"
                          if static is not None else "no static interval meets both at every rate"))
    return None


def _up(value: float | None) -> float:
    return 0.0 if value is None else max(0.5, -(-value // 0.5) * 0.5)
