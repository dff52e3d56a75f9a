"""`chronos profile report`: one row per run, and the two pictures a profile is for: recovery time
and p99 latency against the checkpoint interval, one line per load level; then every run's recoveries by phase,
measured against what the phase model predicts from the other runs."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chronos.optimizer.phase_model import PRIOR, PhaseModel, Phases, fit_phase_model
from chronos.optimizer.phase_observations import job_capacity, phase_observation
from chronos.profiler.records import ProfileRun


@dataclass(frozen=True)
class ReportRow:
    trial: int
    run_id: str
    status: str
    interval_s: float
    load_scale: float
    load_rate: float
    throughput: float | None
    p50_ms: float | None
    p99_ms: float | None
    checkpoint_ms: float | None
    checkpoint_kib: float | None
    cpu_pct: float | None
    faults: int
    not_recovered: int
    recovery_s: float | None  # the worst recovered fault of the run
    replayed: int | None
    duration_s: float
    error: str
    recovery: str = "live"  # the recovery settings its cluster ran with
    p99_again_ms: tuple[float, ...] = ()  # the steady window's p99 measured again after the faults (a repeat)


def report_rows(runs: Sequence[ProfileRun]) -> list[ReportRow]:
    rows = []
    for run in runs:
        s = run.steady
        recovered = [m.recovery_s for m in run.recoveries if m.recovery_s is not None]
        replayed = [m.records_reprocessed for m in run.recoveries if m.records_reprocessed is not None]
        rows.append(ReportRow(
            trial=run.trial_number, run_id=run.run_id, status=run.status,
            interval_s=run.config.interval_ms / 1000, load_scale=run.config.load_scale, load_rate=run.load_rate,
            throughput=s.throughput if s else None, p50_ms=s.p50_ms if s else None, p99_ms=s.p99_ms if s else None,
            checkpoint_ms=s.checkpoint_duration_ms if s else None,
            checkpoint_kib=s.checkpoint_size_bytes / 1024 if s and s.checkpoint_size_bytes is not None else None,
            cpu_pct=s.taskmanager_cpu_pct if s else None,
            faults=len(run.recoveries), not_recovered=len(run.recoveries) - len(recovered),
            recovery_s=max(recovered) if recovered else None,
            replayed=int(statistics.median(replayed)) if replayed else None,
            duration_s=(run.ended_ms - run.started_ms) / 1000, error=run.error, recovery=run.config.recovery,
            p99_again_ms=tuple(a.p99_ms for a in run.repeat_steady if a.p99_ms is not None),
        ))
    return rows


def plot_profile(rows: Sequence[ReportRow], directory: Path) -> list[Path]:
    """recovery_vs_interval.png and p99_vs_interval.png: every completed run a point, the median per
    interval a line, one colour per load level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for field, label, name in (("recovery_s", "worst recovery time (s)", "recovery_vs_interval.png"),
                               ("p99_ms", "p99 end-to-end latency (ms)", "p99_vs_interval.png")):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for scale in sorted({r.load_scale for r in rows}):
            points = sorted((r.interval_s, getattr(r, field)) for r in rows
                            if r.load_scale == scale and r.status == "completed" and getattr(r, field) is not None)
            if not points:
                continue
            rate = statistics.median(r.load_rate for r in rows if r.load_scale == scale)
            line = ax.plot(*zip(*points, strict=True), "o", alpha=0.6)[0]
            xs = sorted({x for x, _ in points})
            ax.plot(xs, [statistics.median(y for x, y in points if x == x0) for x0 in xs], "-", color=line.get_color(),
                    label=f"load x{scale:g} (~{rate:,.0f} ev/s)")
        ax.set(xlabel="checkpoint interval (s)", ylabel=label, title=label.split(" (")[0] + " vs checkpoint interval")
        ax.set_xscale("log")
        ticks = sorted({r.interval_s for r in rows})
        if ticks:
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
        fig.tight_layout()
        fig.savefig(directory / name, dpi=110)
        plt.close(fig)
        written.append(directory / name)
    return written


@dataclass(frozen=True)
class PhaseRow:
    """One run's recoveries by phase (means, s): measured, and as the phase model predicts them when fitted on
    the other runs alone (held out: its prior when no other run measured phases)."""

    trial: int
    run_id: str
    interval_s: float
    load_rate: float
    recoveries: int
    measured: Phases
    predicted: Phases
    model: str  # "held out" or "prior"
    recovery: str = "live"


def _mean_phases(phases: Sequence[Phases]) -> Phases:
    return Phases(*(statistics.mean(getattr(p, k) for p in phases)
                    for k in ("detect_s", "reschedule_s", "restore_s", "catchup_s")))


def phase_rows(runs: Sequence[ProfileRun]) -> list[PhaseRow]:
    completed = [run for run in runs if run.status == "completed"]
    capacity = job_capacity([m for run in completed for m in run.recoveries])
    by_run = {run.run_id: [o for m in run.recoveries if (o := phase_observation(
        m, run.load_rate, (run.steady.checkpoint_size_bytes or 0.0) if run.steady else 0.0, capacity)) is not None]
        for run in completed}
    rows = []
    for run in completed:
        mine = by_run[run.run_id]
        if not mine:
            continue
        others = [o for run_id, observed in by_run.items() if run_id != run.run_id for o in observed]
        model = fit_phase_model(others) if others else PhaseModel(PRIOR, 0, None)
        rows.append(PhaseRow(run.trial_number, run.run_id, run.config.interval_ms / 1000, run.load_rate, len(mine),
                             _mean_phases([o.measured for o in mine]),
                             _mean_phases([model.predict(o.settings, o.conditions) for o in mine]),
                             "held out" if others else "prior", run.config.recovery))
    return rows
