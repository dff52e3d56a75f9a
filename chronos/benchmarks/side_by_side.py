"""The side-by-side's figures from what one arm left behind (the tuner's JSON lines, the injected faults,
the checkpoint ledger, the exactly-once count), apart from the run itself so they can be checked by a test
and recomputed from a saved arms.json without running anything again."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scenario:
    arm_s: float
    base_rate: float
    step_at_s: float
    step_to: float
    swing: float
    period_s: float
    failures_s: tuple[float, ...]
    latency_target_s: float
    recovery_target_s: float
    decide_every_s: float
    khaos_every_s: float
    cooldown_s: float
    grace_s: float
    name: str = "idle"  # idle: the first round's demo job at a few % of its capacity; busy: 40-85 % of it

    def rate(self, t: float) -> float:
        """A step, then a daily-like swing around the new level (one "day" is `period_s`)."""
        if t < self.step_at_s:
            return self.base_rate
        return max(200.0, self.step_to + self.swing * math.sin(2 * math.pi * (t - self.step_at_s) / self.period_s))


def scenario(quick: bool, seed: int) -> Scenario:
    """Failures at seeded random moments, one per slot, the same for every arm."""
    rng = random.Random(seed)
    if quick:
        return Scenario(110, 1500, 20, 4500, 1500, 60, (round(rng.uniform(38, 48), 1),), 25, 45, 10, 60, 60, 20)
    slots = [(150 + i * 150, 210 + i * 150) for i in range(3)]  # one failure per 2.5-minute slot
    failures = tuple(round(rng.uniform(a, b), 1) for a, b in slots)
    # Khaos decides every 300 s as published; the others every 20 s.
    return Scenario(600, 1500, 90, 4000, 2000, 300, failures, 25, 45, 20, 300, 120, 45)


BUSY_LOW, BUSY_HIGH = 0.40, 0.85  # the busy scenario's input, as shares of the job's measured capacity


def busy_scenario(capacity: float, seed: int, quick: bool, latency_target_s: float,
                  recovery_target_s: float, arm_s: float = 900.0) -> Scenario:
    """The verdict's scenario: a job near its capacity, where the interval decides how long a recovery
    replays and how much checkpointing costs. The input swings between 40 and 85 % of the capacity measured on
    the bench's own stack (bench/capacity.py), one compressed "day" per arm starting at the middle on the way
    up; worst moments for nobody in particular: TaskManager kills at seeded moments, one per slot (four in a full
    arm, one in a quick one), each slot's kill far enough from its end to be measured; the same for every arm.
    The targets come from the bench's profile, so they are given, not chosen here. A full arm is 15 minutes unless
    told; its wall time adds the stack's start and the exactly-once check (a 600 s busy arm took 1,122 s)."""
    if capacity <= 0:
        raise ValueError("the capacity must be measured first (bench/capacity.py)")
    rng = random.Random(seed)
    arm_s, kills = (300.0, 1) if quick else (arm_s, 4)
    lead = 45.0  # the tuner's startup grace: nothing is judged before it
    slot = (arm_s - lead - recovery_target_s - 15) / kills
    failures = tuple(round(rng.uniform(lead + i * slot, lead + (i + 0.7) * slot), 1) for i in range(kills))
    mid = (BUSY_LOW + BUSY_HIGH) / 2 * capacity
    swing = (BUSY_HIGH - BUSY_LOW) / 2 * capacity
    return Scenario(arm_s, mid, 0.0, mid, swing, arm_s, failures, latency_target_s, recovery_target_s,
                    20, 300, 120, lead, name="busy")


@dataclass(frozen=True)
class ArmRecord:
    """Everything measured during one arm, as collected."""

    arm: str
    started_ms: int
    events: tuple[dict[str, Any], ...]  # the tuner's JSON lines
    injected_ms: tuple[int, ...]  # wall time of every TaskManager kill
    checkpoint_s: tuple[float, ...]  # end-to-end duration of every completed checkpoint
    lost: int
    duplicated: int
    counted_events: int
    error: str = ""
    delivered_settled: bool = True  # False: the output still grew at the check's deadline; `lost`: not delivered yet


@dataclass(frozen=True)
class Recovery:
    injected_ms: int
    interval_s: float
    rate: float
    from_fault_s: float | None  # fault -> back in steady state (the profile's definition)
    from_flink_s: float | None  # Flink's failure timestamp -> steady state (what the tuner measures)


@dataclass(frozen=True)
class ArmFigures:
    arm: str
    latency_violation_s: float  # the tuner's count: output later than the target (tune.qos_account)
    latency_violation_in_recovery_s: float  # the part of it counted between a kill and the job's recovery
    recovery_violation_s: float  # seconds past the target, from each kill to steady state again
    recoveries: tuple[Recovery, ...]
    over_target: int  # recoveries longer than the target, or never back
    unrecovered: int
    mean_recovery_s: float | None
    max_recovery_s: float | None
    mean_throughput: float | None  # events/s the sources read, time-weighted: what arrived plus what was replayed
    mean_input_rate: float | None  # events/s that arrived, time-weighted
    checkpoints: int
    checkpoint_share: float  # share of the arm's time a checkpoint was in flight
    retunes: int
    retune_downtime_s: float
    lost: int
    duplicated: int
    counted_events: int
    series: tuple[tuple[float, float, float | None, float | None, float | None], ...] = field(default=())
    error: str = ""
    delivered_settled: bool = True

    @property
    def latency_violation_outside_recovery_s(self) -> float:
        """The lateness the interval choice (and retunes) answer for: what failures did not cause."""
        return self.latency_violation_s - self.latency_violation_in_recovery_s


def summarise(record: ArmRecord, sc: Scenario) -> ArmFigures:
    readings = [e for e in record.events if e.get("event") == "reading"]
    summary = next((e for e in record.events if e.get("event") == "summary"), {})
    failures = [e for e in record.events if e.get("event") == "failure"]
    recoveries = tuple(_match(ms, failures) for ms in record.injected_ms)
    measured = [r.from_fault_s for r in recoveries if r.from_fault_s is not None]
    retunes = [e for e in record.events if e.get("event") == "retune" and e.get("outcome") == "verified"]
    series = tuple(
        ((e["at_ms"] - record.started_ms) / 1000, float(e["interval_s"]), e.get("input_rate"), e.get("throughput"),
         None if e.get("staleness_ms") is None else e["staleness_ms"] / 1000)
        for e in readings)
    unrecovered = sum(r.from_fault_s is None for r in recoveries)
    end_ms = record.started_ms + sc.arm_s * 1000
    windows = [(r.injected_ms, end_ms if r.from_fault_s is None else r.injected_ms + r.from_fault_s * 1000)
               for r in recoveries]
    return ArmFigures(
        arm=record.arm,
        latency_violation_s=float(summary.get("latency_violation_s", sum(e["latency_violation_s"] for e in readings))),
        latency_violation_in_recovery_s=sum(
            e["latency_violation_s"] for e in readings if any(a < e["at_ms"] <= b for a, b in windows)),
        recovery_violation_s=sum(_beyond(r, end_ms, sc) for r in recoveries),
        recoveries=recoveries,
        over_target=unrecovered + sum(s > sc.recovery_target_s for s in measured),
        unrecovered=unrecovered,
        mean_recovery_s=statistics.fmean(measured) if measured else None,
        max_recovery_s=max(measured) if measured else None,
        mean_throughput=_time_weighted([(e["at_ms"], e.get("throughput")) for e in readings]),
        mean_input_rate=_time_weighted([(e["at_ms"], e.get("input_rate")) for e in readings]),
        checkpoints=len(record.checkpoint_s),
        checkpoint_share=sum(record.checkpoint_s) / sc.arm_s,
        retunes=len(retunes),
        retune_downtime_s=sum(float(e.get("downtime_s") or 0.0) for e in retunes),
        lost=record.lost, duplicated=record.duplicated, counted_events=record.counted_events,
        series=series, error=record.error, delivered_settled=record.delivered_settled)


def _time_weighted(points: Sequence[tuple[int, float | None]]) -> float | None:
    """Mean of a rate read at uneven moments, each reading standing for the time since the one before."""
    total = seconds = 0.0
    for (before, _), (at, value) in itertools.pairwise(points):
        if value is not None and at > before:
            total += value * (at - before) / 1000
            seconds += (at - before) / 1000
    return total / seconds if seconds else None


def _beyond(r: Recovery, end_ms: float, sc: Scenario) -> float:
    """Seconds past the recovery target, counted from the kill; a recovery never seen counts to the arm's end."""
    took = r.from_fault_s if r.from_fault_s is not None else (end_ms - r.injected_ms) / 1000
    return max(0.0, took - sc.recovery_target_s)


def _match(injected_ms: int, failures: Sequence[dict[str, Any]]) -> Recovery:
    """The tuner's failure that this kill caused: the first one Flink timestamped after it."""
    after = [f for f in failures if f.get("failed_ms") is not None and f["failed_ms"] >= injected_ms - 2000]
    if not after:
        return Recovery(injected_ms, 0.0, 0.0, None, None)
    f = min(after, key=lambda x: x["failed_ms"])
    if f.get("recovery_s") is None:
        return Recovery(injected_ms, f["interval_ms"] / 1000, f["rate"], None, None)
    recovered_ms = f["failed_ms"] + f["recovery_s"] * 1000
    return Recovery(injected_ms, f["interval_ms"] / 1000, f["rate"], round((recovered_ms - injected_ms) / 1000, 2),
                    round(f["recovery_s"], 2))


def table(figures: Sequence[ArmFigures], baseline_arm: str) -> list[dict[str, Any]]:
    """One row per arm; checkpoint overhead relative to the longest static interval. Throughput: every arm keeps up
    with the same input, so what differs is how much more the sources read than arrived (replays after failures)."""
    base = next((f for f in figures if f.arm == baseline_arm and not f.error), None)
    rows = []
    for f in figures:
        rows.append({
            "arm": f.arm,
            "latency_violation_s": round(f.latency_violation_s, 1),
            "of_it_in_recovery_s": round(f.latency_violation_in_recovery_s, 1),
            "recovery_violation_s": round(f.recovery_violation_s, 1),
            "qos_violation_s": round(f.latency_violation_s + f.recovery_violation_s, 1),
            "recoveries_over_target": f"{f.over_target}/{len(f.recoveries)}",
            "mean_recovery_s": _r(f.mean_recovery_s), "max_recovery_s": _r(f.max_recovery_s),
            "mean_input_ev_s": _r(f.mean_input_rate, 0), "mean_read_ev_s": _r(f.mean_throughput, 0),
            "reread_pct": _r(None if not f.mean_input_rate or f.mean_throughput is None
                             else 100 * (f.mean_throughput / f.mean_input_rate - 1)),
            "checkpoints": f.checkpoints, "checkpoint_time_pct": round(100 * f.checkpoint_share, 2),
            "overhead_vs_base_pct": _r(None if base is None else 100 * (f.checkpoint_share - base.checkpoint_share), 2),
            "retunes": f.retunes, "retune_downtime_s": round(f.retune_downtime_s, 1),
            "lost": f.lost if f.delivered_settled else f"{f.lost} not delivered yet", "duplicated": f.duplicated,
            "error": f.error,
        })
    return rows


def _r(value: float | None, digits: int = 1) -> float | str:
    return "" if value is None else round(value, digits)


CHRONOS_ARMS = ("chronos", "chronos-restart", "chronos-settings")
SETTINGS_ARM = "chronos-settings"
RECOVERY_GOAL_MEAN_S, RECOVERY_GOAL_P90_S = 12.0, 15.0


def qos_s(f: ArmFigures) -> float:
    return f.latency_violation_s + f.recovery_violation_s


def is_static(arm: str) -> bool:
    """A static interval under Flink's defaults (`static-N`); `static-N-settings` has chronos's recovery settings."""
    parts = arm.split("-")
    return len(parts) == 2 and parts[0] == "static" and parts[1].isdigit()


def p90(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def frontier_at(statics: Sequence[ArmFigures], share: float) -> tuple[float, str] | None:
    """The static frontier's QoS-violation seconds at a checkpoint share, and which arms give it: the best static arm
    that checkpoints no more, or, where it is lower, the line frontier.png draws between the static arms on either
    side of the share (a user could have set any interval between two measured ones). None: no static arm
    checkpoints as little."""
    cheaper = [f for f in statics if f.checkpoint_share <= share]
    if not cheaper:
        return None
    best = min(cheaper, key=qos_s)
    value, said = qos_s(best), best.arm
    dearer = [f for f in statics if f.checkpoint_share > share]
    if dearer:
        low = max(cheaper, key=lambda f: f.checkpoint_share)
        high = min(dearer, key=lambda f: f.checkpoint_share)
        at = qos_s(low) + (qos_s(high) - qos_s(low)) * (share - low.checkpoint_share) / (
            high.checkpoint_share - low.checkpoint_share)
        if at < value:
            value, said = at, f"the line from {low.arm} to {high.arm}"
    return value, said


def verdict(figures: Sequence[ArmFigures], scenario_name: str = "idle") -> list[str]:
    """The side by side's goals, line by line: MET or NOT MET, with the numbers. The contender is the best of chronos's
    arms. Busy: half the QoS-violation seconds of the static frontier read at its checkpoint time (`frontier_at`:
    the best static arm that checkpoints no more, or the line to one that checkpoints more where that is lower;
    before, the first alone, which judged a busy run's chronos at 14.8 % against static 30 s at 5.6 % while
    static 10 s at 16.1 % had 39 % fewer violations), half of Young/Daly's, fewer than Khaos-style's, and
    recovery within the goal in the arm with the proposed settings. Idle and own job: no more violation seconds
    than the best static interval."""
    ok = [f for f in figures if not f.error]
    contenders = [f for f in ok if f.arm in CHRONOS_ARMS]
    if not contenders:
        return ["no chronos arm completed: no verdict"]
    mine = min(contenders, key=lambda f: (qos_s(f), f.checkpoint_share))
    statics = [f for f in ok if is_static(f.arm)]
    lines = []
    if scenario_name == "busy":
        cheaper = [f for f in statics if f.checkpoint_share <= mine.checkpoint_share]
        if statics and not cheaper:
            cheapest = min(statics, key=lambda f: f.checkpoint_share)
            lines.append(f"NOT MET: no static arm checkpoints as little as {mine.arm} "
                         f"({100 * mine.checkpoint_share:.2f}% of the time; the least, {cheapest.arm}, "
                         f"{100 * cheapest.checkpoint_share:.2f}%): the frontier cannot be read at its checkpoint time")
        frontier = frontier_at(statics, mine.checkpoint_share)
        if frontier is not None:
            value, said = frontier
            cut = 1 - qos_s(mine) / value if value else (0.0 if qos_s(mine) == 0 else -math.inf)
            lines.append(f"{'MET' if cut >= 0.5 else 'NOT MET'}: >= 50% fewer QoS-violation s than the static frontier "
                         f"at no more checkpoint time ({said}, read at {100 * mine.checkpoint_share:.2f}%): {mine.arm} "
                         f"{qos_s(mine):.0f} s vs {value:.0f} s ({100 * cut:.0f}% fewer)")
        for label, rivals in (("Young/Daly", [f for f in ok if f.arm == "young-daly"]),):
            if rivals:
                best = min(rivals, key=qos_s)
                cut = 1 - qos_s(mine) / qos_s(best) if qos_s(best) else (0.0 if qos_s(mine) == 0 else -math.inf)
                lines.append(f"{'MET' if cut >= 0.5 else 'NOT MET'}: >= 50% fewer QoS-violation s than {label} "
                             f"({best.arm}): {mine.arm} {qos_s(mine):.0f} s vs {qos_s(best):.0f} s "
                             f"({100 * cut:.0f}% fewer), checkpointing {100 * mine.checkpoint_share:.2f}% vs "
                             f"{100 * best.checkpoint_share:.2f}% of the time")
        khaos = next((f for f in ok if f.arm == "khaos"), None)
        if khaos is not None:
            better = qos_s(mine) < qos_s(khaos)
            lines.append(f"{'MET' if better else 'NOT MET'}: fewer QoS-violation s than the Khaos-style arm: "
                         f"{qos_s(mine):.0f} s vs {qos_s(khaos):.0f} s")
        settings = next((f for f in ok if f.arm == SETTINGS_ARM), None)
        if settings is not None:
            times = [r.from_fault_s for r in settings.recoveries if r.from_fault_s is not None]
            mean = statistics.fmean(times) if times else None
            high = p90(times)
            met = (mean is not None and high is not None and len(times) == len(settings.recoveries)
                   and mean <= RECOVERY_GOAL_MEAN_S and high <= RECOVERY_GOAL_P90_S)
            lines.append(f"{'MET' if met else 'NOT MET'}: recovery after a kill <= {RECOVERY_GOAL_MEAN_S:g} s mean and "
                         f"<= {RECOVERY_GOAL_P90_S:g} s p90 in {SETTINGS_ARM}: "
                         + (f"mean {mean:.1f} s, p90 {high:.1f} s over {len(times)} of {len(settings.recoveries)} kills"
                            if mean is not None and high is not None else "no recovery measured"))
    elif statics:
        best = min(statics, key=qos_s)
        met = qos_s(mine) <= qos_s(best)
        lines.append(f"{'MET' if met else 'NOT MET'}: no more QoS-violation s than the best static interval "
                     f"({best.arm}): {mine.arm} {qos_s(mine):.0f} s vs {qos_s(best):.0f} s")
    caused = sorted(f.latency_violation_in_recovery_s for f in ok)
    lines.append(f"NOTE: between a kill and the recovery every arm was late for {caused[0]:.0f}-{caused[-1]:.0f} s "
                 f"({mine.arm} {mine.latency_violation_in_recovery_s:.0f} s); outside recoveries {mine.arm} "
                 f"{mine.latency_violation_outside_recovery_s:.0f} s, the others "
                 + ", ".join(f"{f.arm} {f.latency_violation_outside_recovery_s:.0f} s" for f in ok if f is not mine))
    clean = all(f.lost == 0 and f.duplicated == 0 for f in figures) and all(not f.error for f in figures)
    # An arm whose output was still growing at the check's deadline (a job still catching up) neither lost nor
    # kept its records as far as anyone can tell: the line is then undecided, not met or missed.
    undecided = [f for f in figures if not f.delivered_settled and f.lost and not f.duplicated]
    broken = [f for f in figures if f.error or f.duplicated or (f.lost and f.delivered_settled)]
    word = "MET" if clean else "NOT DECIDED" if undecided and not broken else "NOT MET"
    lines.append(f"{word}: 0 records lost or duplicated in every arm "
                 f"({', '.join(f'{f.arm} {f.lost}/{f.duplicated}' for f in figures)})"
                 + (f"; still arriving when the check's time was up: {', '.join(f.arm for f in undecided)}"
                    if undecided else ""))
    return lines


@dataclass(frozen=True)
class SavedRun:
    """One invocation's arms.json: its scenario, its arms and what they saw. A scenario's arms can take longer than
    one invocation (a busy arm is ~18 minutes with its exactly-once check); the report of several is one table."""

    scenario: Scenario
    quick: bool
    laps: dict[str, Any]
    context: dict[str, Any]
    records: tuple[ArmRecord, ...]

    @classmethod
    def parse(cls, saved: dict[str, Any]) -> SavedRun:
        """From arms.json as the bench wrote it; KeyError/TypeError/ValueError on anything else."""
        sc = Scenario(**{**saved["scenario"], "failures_s": tuple(saved["scenario"]["failures_s"])})
        records = tuple(ArmRecord(**{**r, **{k: tuple(r[k]) for k in ("events", "injected_ms", "checkpoint_s")}})
                        for r in saved["records"])
        return cls(sc, bool(saved["quick"]), dict(saved["laps"]), dict(saved.get("context", {})), records)


# What must agree for arms of several invocations to be one comparison: the trace and kills (scenario), the
# arm length (quick), and the targets and profile every model-based arm was given (context).
_SAME_CONTEXT = ("latency_target_s", "recovery_target_s", "best_static_s", "grid", "job", "capacity")


def merge_runs(runs: Sequence[SavedRun]) -> SavedRun:
    """The arms of several invocations as one run, in their order; ValueError (naming what differs) when they did
    not see the same scenario, targets and profile, or when an arm appears twice (which one is the result?)."""
    if not runs:
        raise ValueError("no saved runs to merge")
    first = runs[0]
    for n, run in enumerate(runs[1:], start=2):
        if run.scenario != first.scenario:
            raise ValueError(f"run {n} has another scenario than run 1 (trace, kills or targets differ)")
        if run.quick != first.quick:
            raise ValueError(f"run {n} is {'quick' if run.quick else 'full'}, run 1 is not")
        differing = [k for k in _SAME_CONTEXT if run.context.get(k) != first.context.get(k)]
        if differing:
            raise ValueError(f"run {n} was given another {', '.join(differing)} than run 1")
    names = [r.arm for run in runs for r in run.records]
    twice = sorted({a for a in names if names.count(a) > 1})
    if twice:
        raise ValueError(f"arms in more than one run: {', '.join(twice)}")
    return SavedRun(first.scenario, first.quick, {k: v for run in runs for k, v in run.laps.items()},
                    first.context, tuple(r for run in runs for r in run.records))
