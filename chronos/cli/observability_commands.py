"""Where to look: a Prometheus for the local stack, the Grafana dashboards as files, and `chronos
report`, the same views as PNGs for anyone without Grafana."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chronos.cli.common import AsJson, StackDir, err, out, output_directory, print_json, say_stale, stack_dir_of
from chronos.errors import InvalidInput
from chronos.model import check_url, parse_interval_ms

if TYPE_CHECKING:
    from chronos.report.curves import Marker, Panel

prometheus_app = typer.Typer(help="A Prometheus on 127.0.0.1 scraping the local stack and the tuner.",
                             no_args_is_help=True)


@prometheus_app.command("up")
def prometheus_up(
    stack_dir: StackDir = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port of Prometheus's web UI and API (0: a free one).")] = 9090,
    tuner: Annotated[list[str] | None, typer.Option(
        help="host:port of a `chronos tune` metrics endpoint to scrape (repeatable).")] = None,
    as_json: AsJson = False,
) -> None:
    """Start Prometheus scraping Flink's reporter (every port of the stack's range) and the tuner."""
    from chronos.stack.prometheus_server import start_local_prometheus
    from chronos.stack.state import load_state

    sd = stack_dir_of(stack_dir)
    state = load_state(sd)
    if state is None:
        raise InvalidInput(f"no stack in {sd}; run `chronos stack up` first")
    targets = [*state.prometheus_urls, *(f"http://{t}/metrics" for t in (tuner or ["127.0.0.1:9464"]))]
    server = start_local_prometheus(sd, targets, port or None, say_stale)
    if as_json:
        print_json({"url": server.url, "pid": server.pid, "targets": targets})
        return
    out.print(f"Prometheus on {server.url} (pid {server.pid}), scraping {len(targets)} targets")
    out.print(f"  Grafana: add it as a Prometheus data source, import {Path('helm/chronos/dashboards')}/*.json")
    out.print(f"  without Grafana: chronos report --prometheus {server.url} --out report/")


@prometheus_app.command("down")
def prometheus_down(stack_dir: StackDir = None) -> None:
    """Stop the Prometheus `chronos prometheus up` started (its data stays in the stack directory)."""
    from chronos.stack.prometheus_server import stop_local_prometheus

    stopped = stop_local_prometheus(stack_dir_of(stack_dir), say_stale)
    out.print("Prometheus stopped" if stopped else "no Prometheus running for this stack")


def dashboards(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the dashboard JSON files.")] = Path("dashboards"),
) -> None:
    """Write the Grafana dashboards (JSON, templated by job and Prometheus data source)."""
    from chronos.metrics.grafana import write_all

    for path in write_all(output_directory(out_dir, "--out")):
        out.print(str(path))


def report(
    prometheus: Annotated[str | None, typer.Option(help="Prometheus URL to read the views from.")] = None,
    db: Annotated[Path | None, typer.Option(help="Or the tuner's database \\[default: the stack's profiles.db].")] = None,
    job: Annotated[str | None, typer.Option(help="Flink pipeline name \\[default: the only one on record].")] = None,
    since: Annotated[str, typer.Option(help="How far back (e.g. 30m, 2h).")] = "1h",
    step: Annotated[str, typer.Option(help="Resolution of Prometheus range queries.")] = "5s",
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the PNGs.")] = Path("report"),
    stack_dir: StackDir = None,
    as_json: AsJson = False,
) -> None:
    """Draw the dashboards' views as PNGs: one per dashboard and one per view."""
    from chronos.metrics.views import DASHBOARDS
    from chronos.report.render import dashboard_png, view_png

    output_directory(out_dir, "--out")
    end = time.time()
    start = end - parse_interval_ms(since) / 1000
    written: list[Path] = []
    empty: list[str] = []
    if prometheus:
        boards, name = _from_prometheus(check_url(prometheus, "--prometheus"), job, start, end, parse_interval_ms(step) / 1000)
    else:
        boards, name = _from_store((db or stack_dir_of(stack_dir) / "profiles.db").expanduser(), job, start, end)
    for spec in DASHBOARDS:
        panels, markers = boards[spec.uid]
        span = (start, end)
        written.append(dashboard_png(f"{spec.title} — {name}", panels, markers, out_dir / f"{spec.uid}.png", span))
        for panel in panels:
            written.append(view_png(panel, markers, out_dir / spec.uid / f"{panel.view.key}.png", span))
            if panel.empty:
                empty.append(f"{panel.view.key}: {panel.note}")
    if as_json:
        print_json({"job": name, "files": [str(p) for p in written], "empty": empty})
        return
    out.print(f"{len(written)} PNGs for {name} in {out_dir}/ ({', '.join(s.uid + '.png' for s in DASHBOARDS)} "
              "show whole dashboards)")
    for line in empty:
        err.print(f"  empty: {line}", highlight=False)


Boards = dict[str, tuple[list["Panel"], list["Marker"]]]  # per dashboard uid: its panels and markers


def _from_prometheus(url: str, job: str | None, start: float, end: float, step: float) -> tuple[Boards, str]:
    from chronos.bounded_http import BoundedClient
    from chronos.metrics.exporter import job_label
    from chronos.metrics.views import DASHBOARDS
    from chronos.report.from_prometheus import DEADLINE_S, MAX_POINTS, PrometheusViews, Window

    with BoundedClient(deadline_s=DEADLINE_S) as client:
        views = PrometheusViews(url, client)
        window = Window(start, end, step)
        if (end - start) / step > MAX_POINTS:
            raise InvalidInput(f"--since over --step is {(end - start) / step:,.0f} points a series; Prometheus answers "
                               f"at most {MAX_POINTS:,}: give a longer --step")
        if job is None:
            found = {s["metric"].get("job_name", "") for s in
                     views.query_range("chronos_checkpoint_interval_seconds", window)} - {""}
            if len(found) != 1:
                raise InvalidInput(f"{len(found)} tuned jobs in Prometheus {url} over the range "
                                   f"({', '.join(sorted(found)) or 'none'}); pick one with --job")
            label = found.pop()
        else:
            label = job_label(job)
        return {spec.uid: views.dashboard(spec, label, window) for spec in DASHBOARDS}, label


def _from_store(db: Path, job: str | None, start: float, end: float) -> tuple[Boards, str]:
    from chronos.cli import wiring
    from chronos.metrics.views import DASHBOARDS
    from chronos.report.from_store import StoreViews

    if not db.exists():
        raise InvalidInput(f"no tuner database at {db}; give --db or --prometheus")
    journal = wiring.journal(db)
    try:
        if job is None:
            names = journal.job_names()
            if len(names) != 1:
                raise InvalidInput(f"{len(names)} tuned jobs in {db} ({', '.join(names) or 'none'}); pick one with --job")
            job = names[0]
        views = StoreViews(journal)
        since_ms, until_ms = int(start * 1000), int(end * 1000)
        return {spec.uid: views.dashboard(spec, job, since_ms, until_ms) for spec in DASHBOARDS}, job
    finally:
        journal.close()
