"""Grafana dashboards built from the views with Grafana's own typed builder (grafana-foundation-sdk),
so the JSON has the schema Grafana expects rather than one copied from an exported dashboard.

The output is deterministic (same views, same bytes): the chart ships it and a test checks that the
shipped files are what this module generates.
"""

from __future__ import annotations

import json
from pathlib import Path

from grafana_foundation_sdk.builders import bargauge, prometheus, stat, timeseries
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as dm

from chronos.metrics.views import DASHBOARDS, Dashboard, View

DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
HEIGHT = 8


def _panel(view: View) -> timeseries.Panel | stat.Panel | bargauge.Panel:
    panel: timeseries.Panel | stat.Panel | bargauge.Panel = (
        timeseries.Panel() if view.kind == "timeseries" else stat.Panel() if view.kind == "stat" else
        bargauge.Panel().orientation(common.VizOrientation.HORIZONTAL))
    panel.title(view.title).description(view.description).unit(view.unit).datasource(DATASOURCE)
    panel.height(HEIGHT).span(view.width)
    for ref, series in zip("ABCDEFGH", view.series, strict=False):
        query = prometheus.Dataquery().expr(series.expr).legend_format(series.legend).ref_id(ref).datasource(DATASOURCE)
        if view.kind == "bargauge":
            query.instant()  # one value per series, in the query's order (sort_desc: worst first)
        panel.with_target(query)
    return panel


def build(spec: Dashboard) -> dict[str, object]:
    board = (gd.Dashboard(spec.title).uid(spec.uid).description(spec.description).tags(["chronos", "flink"])
             .refresh("10s").time("now-1h", "now").timezone("browser").editable()
             .tooltip(dm.DashboardCursorSync.CROSSHAIR)
             .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
             .with_variable(gd.QueryVariable("job_name").label("Job").datasource(DATASOURCE)
                            .query("label_values(chronos_checkpoint_interval_seconds, job_name)")
                            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(dm.VariableSort.ALPHABETICAL_ASC)
                            .multi(True).include_all(True)))
    for note in spec.annotations:
        board.annotation(gd.AnnotationQuery().name(note.name).datasource(DATASOURCE).enable(True)
                         .icon_color(note.color).expr(note.expr))
    for view in spec.views:
        board.with_panel(_panel(view))
    encoded: dict[str, object] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for annotation, note in zip(_annotations(encoded), spec.annotations, strict=True):
        annotation["titleFormat"] = note.text  # the Prometheus annotation's text; the SDK has no setter for it
        annotation["useValueForTime"] = False
    return encoded


def _annotations(encoded: dict[str, object]) -> list[dict[str, object]]:
    block = encoded.get("annotations")
    if not isinstance(block, dict):
        return []
    return [a for a in block.get("list", []) if isinstance(a, dict) and a.get("name") != "Annotations & Alerts"]


def render(spec: Dashboard) -> str:
    return json.dumps(build(spec), indent=2, sort_keys=True) + "\n"


def write_all(directory: Path) -> list[Path]:
    """Every dashboard as `<uid>.json` in `directory` (what Grafana's file provisioner and sidecar load)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in DASHBOARDS:
        path = directory / f"{spec.uid}.json"
        path.write_text(render(spec))
        written.append(path)
    return written
