"""The views the tuner's journal can fill on its own (decisions with what they saw, retunes, live
recoveries): a report for a run nobody scraped. Views that need Flink's metrics say so instead."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from chronos.metrics.views import Dashboard, View
from chronos.report.curves import Curve, Marker, Panel
from chronos.tune.journal import DecisionRecord, Journal, LiveRecovery, Retune

Column = Callable[[DecisionRecord], float | None]


def _curve(label: str, rows: Sequence[DecisionRecord], column: Column) -> Curve:
    points = [(r.at_ms / 1000, v) for r in rows if (v := column(r)) is not None]
    return Curve(label, tuple(t for t, _ in points), tuple(v for _, v in points))


def _violation_share(rows: Sequence[DecisionRecord], column: Column) -> tuple[list[float], list[float]]:
    times, shares = [], []
    for before, after in itertools.pairwise(rows):
        a, b = column(before), column(after)
        dt = (after.at_ms - before.at_ms) / 1000
        if a is not None and b is not None and dt > 0:
            times.append(after.at_ms / 1000)
            shares.append(max(0.0, b - a) / dt)
    return times, shares


class StoreViews:
    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    def panel(self, view: View, job_name: str, since_ms: int, until_ms: int) -> Panel:
        if not view.store_backed:
            return Panel(view, (), "not in the journal: draw it from Prometheus (--prometheus)")
        rows = [r for r in self._journal.decisions(job_name, since_ms) if r.at_ms <= until_ms]
        recoveries = [r for r in self._journal.recoveries(job_name) if since_ms <= r.failed_ms <= until_ms]
        retunes = [r for r in self._journal.retunes() if r.job_name == job_name and since_ms <= r.decided_ms <= until_ms]
        curves = self._curves(view.key, rows, recoveries, retunes)
        return Panel(view, curves, "" if any(c.values for c in curves) else "no decisions in the range")

    @staticmethod
    def _curves(key: str, rows: Sequence[DecisionRecord], recoveries: Sequence[LiveRecovery],
                retunes: Sequence[Retune]) -> tuple[Curve, ...]:
        if key == "violations":
            out = []
            for kind, column in (("latency", _latency_v), ("recovery", _recovery_v)):
                times, shares = _violation_share(rows, column)
                out.append(Curve(kind, tuple(times), tuple(shares)))
            return tuple(out)
        if key == "violation-totals" and rows:
            return tuple(Curve(kind, (rows[-1].at_ms / 1000,), (max(0.0, (column(rows[-1]) or 0.0) - (column(rows[0]) or 0.0)),))
                         for kind, column in (("latency", _latency_v), ("recovery", _recovery_v)))
        if key == "latency":
            return (_curve("observed p99", rows, lambda r: r.observed_p99_s),
                    _curve("predicted", rows, lambda r: r.predicted_latency_s),
                    _curve("target", rows, lambda r: r.target_latency_s))
        if key == "recovery":
            measured = [(r.failed_ms / 1000, r.recovery_s) for r in recoveries if r.recovery_s is not None]
            return (Curve("measured", tuple(t for t, _ in measured), tuple(v for _, v in measured)),
                    _curve("predicted", rows, lambda r: r.predicted_recovery_s),
                    _curve("target", rows, lambda r: r.target_recovery_s))
        if key == "interval":
            return (_curve("in force", rows, lambda r: r.interval_s), _curve("recommended", rows, lambda r: r.wanted_s))
        if key == "input-rate":
            return (_curve("observed", rows, lambda r: r.input_rate), _curve("forecast peak", rows, lambda r: r.forecast_rate))
        if key == "retune-downtime":
            timed = [(r.updated_ms / 1000, r.downtime_s) for r in retunes if r.downtime_s is not None]
            return (Curve("downtime per retune", tuple(t for t, _ in timed), tuple(v for _, v in timed)),)
        return ()

    def markers(self, job_name: str, since_ms: int, until_ms: int) -> list[Marker]:
        retunes = [Marker(r.decided_ms / 1000, f"retune {r.step}", "orange") for r in self._journal.retunes()
                   if r.job_name == job_name and since_ms <= r.decided_ms <= until_ms]
        failures = [Marker(r.failed_ms / 1000, "failure", "red") for r in self._journal.recoveries(job_name)
                    if since_ms <= r.failed_ms <= until_ms]
        return retunes + failures

    def dashboard(self, spec: Dashboard, job_name: str, since_ms: int, until_ms: int) -> tuple[list[Panel], list[Marker]]:
        panels = [self.panel(view, job_name, since_ms, until_ms) for view in spec.views]
        return panels, self.markers(job_name, since_ms, until_ms)


def _latency_v(r: DecisionRecord) -> float | None:
    return r.latency_violation_s


def _recovery_v(r: DecisionRecord) -> float | None:
    return r.recovery_violation_s
