"""Views drawn with matplotlib (Agg, no display): one PNG per dashboard, laid out like Grafana's grid,
and one per view, so a README or a ticket can carry exactly the picture it needs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, PercentFormatter

from chronos.report.curves import Marker, Panel

_BYTES = ("B", "KiB", "MiB", "GiB", "TiB")


def _bytes(value: float, _: object) -> str:
    unit = 0
    while abs(value) >= 1024 and unit < len(_BYTES) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} {_BYTES[unit]}"


def _when(t: float) -> float:
    """Matplotlib's date number for a unix time (what date axes plot)."""
    return float(mdates.date2num(dt.datetime.fromtimestamp(t, tz=dt.UTC)))  # type: ignore[no-untyped-call]


def _draw(ax: Axes, panel: Panel, markers: Sequence[Marker], span: tuple[float, float] | None = None) -> None:
    view = panel.view
    ax.set_title(view.title, fontsize=10, loc="left")
    if panel.empty:
        ax.text(0.5, 0.5, panel.note or "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
        ax.set_xticks([])
        ax.set_yticks([])
        return
    if view.kind in ("stat", "bargauge"):
        curves = [c for c in panel.curves if c.values]
        if view.kind == "bargauge":  # worst first: at the top
            curves.sort(key=lambda c: c.values[-1])
        ax.barh([c.label for c in curves], [c.values[-1] for c in curves], color="tab:blue")
        for y, c in enumerate(curves):
            ax.text(c.values[-1], y, f" {c.values[-1]:.3g}", va="center", fontsize=8)
        ax.set_xlim(0, max(1.0, max(c.values[-1] for c in curves) * 1.25))
        ax.tick_params(labelsize=8)
        _units(ax, view.unit, axis="x")
        return
    for curve in panel.curves:
        if curve.values:
            style = "o" if len(curve.values) == 1 else "-"
            # Sampled gauges hold their value until the next sample: steps, not slopes.
            ax.plot([_when(t) for t in curve.times_s], curve.values, style, label=curve.label, linewidth=1.4,
                    drawstyle="steps-post")
    for marker in markers:
        ax.axvline(_when(marker.at_s), color=marker.color, linestyle="--", linewidth=0.9, alpha=0.8)
    if span is not None:
        ax.set_xlim(_when(span[0]), _when(span[1]))  # every panel over the same range, as in Grafana
    if all(v >= 0 for c in panel.curves for v in c.values):
        ax.set_ylim(bottom=0)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))  # type: ignore[no-untyped-call]
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    _units(ax, view.unit, axis="y")


def _units(ax: Axes, unit: str, axis: str) -> None:
    target = ax.yaxis if axis == "y" else ax.xaxis
    if unit == "percentunit":
        target.set_major_formatter(PercentFormatter(1.0))
    elif unit == "bytes":
        target.set_major_formatter(FuncFormatter(_bytes))
    elif unit == "s":
        target.set_label_text("seconds", fontsize=8)
    elif unit == "ops":
        target.set_label_text("events/s", fontsize=8)


def dashboard_png(title: str, panels: Sequence[Panel], markers: Sequence[Marker], path: Path,
                  span: tuple[float, float] | None = None) -> Path:
    """The panels two to a row (a full-width view takes a row), as a Grafana dashboard lays them out."""
    rows: list[list[Panel]] = []
    for panel in panels:
        if panel.view.width >= 24 or not rows or len(rows[-1]) == 2 or rows[-1][0].view.width >= 24:
            rows.append([panel])
        else:
            rows[-1].append(panel)
    fig = plt.figure(figsize=(14, 3.4 * len(rows)), dpi=110)
    grid = fig.add_gridspec(len(rows), 2)
    for r, row in enumerate(rows):
        for c, panel in enumerate(row):
            columns = slice(0, 2) if len(row) == 1 else c
            _draw(fig.add_subplot(grid[r, columns]), panel, markers, span)
    fig.suptitle(title, fontsize=13, x=0.01, ha="left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def view_png(panel: Panel, markers: Sequence[Marker], path: Path, span: tuple[float, float] | None = None) -> Path:
    fig, ax = plt.subplots(figsize=(8, 3.4), dpi=110)
    _draw(ax, panel, markers, span)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
