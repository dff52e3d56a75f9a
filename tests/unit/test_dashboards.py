"""The dashboards are generated from one set of views: the shipped JSON is exactly the generator's
output, every panel is templated by job and data source, and each of the issue's views is there.
(That every query returns data from a real run is tests/integration/test_dashboards.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from chronos.metrics.grafana import build, render, write_all
from chronos.metrics.views import DASHBOARDS, OVERVIEW, all_views, promql

SHIPPED = Path(__file__).resolve().parents[2] / "helm" / "chronos" / "dashboards"


def test_the_shipped_dashboards_are_what_the_views_generate(tmp_path: Path) -> None:
    written = write_all(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in SHIPPED.glob("*.json"))
    for path in written:
        assert (SHIPPED / path.name).read_text() == path.read_text(), \
            f"{path.name} is stale: run `chronos dashboards --out helm/chronos/dashboards`"


def test_every_query_is_templated_by_job_and_every_panel_by_data_source() -> None:
    for spec in DASHBOARDS:
        board = build(spec)
        variables = {v["name"]: v for v in board["templating"]["list"]}  # type: ignore[index]
        assert variables["datasource"]["query"] == "prometheus"
        assert variables["job_name"]["query"] == "label_values(chronos_checkpoint_interval_seconds, job_name)"
        assert variables["job_name"]["multi"] and variables["job_name"]["includeAll"]
        for panel in board["panels"]:  # type: ignore[attr-defined]
            assert panel["datasource"]["uid"] == "${datasource}"
            for target in panel["targets"]:
                assert 'job_name=~"$job_name"' in target["expr"], target["expr"]
        for annotation in board["annotations"]["list"]:  # type: ignore[index]
            assert 'job_name=~"$job_name"' in annotation["expr"] and annotation["titleFormat"]


def test_the_views_the_issue_asks_for_are_all_there() -> None:
    titles = " | ".join(v.title.lower() for v in all_views())
    for wanted in ("qos violations", "violation seconds", "p99 latency against its target",
                   "recovery time: measured, predicted, target", "checkpoint interval", "checkpoint duration",
                   "checkpoint size", "input rate and forecast", "model error", "retune downtime"):
        assert wanted in titles, wanted
    names = {d.uid: [a.name for a in d.annotations] for d in DASHBOARDS}
    assert "retunes" in names["chronos-qos"], "retunes annotate the interval"


def test_a_query_becomes_plain_promql_for_one_job() -> None:
    expr = 'rate(x{job_name=~"$job_name"}[$__rate_interval]) + increase(y[$__range])'
    assert promql(expr, "fleet_stats", "30s", "600s") == 'rate(x{job_name=~"fleet_stats"}[30s]) + increase(y[600s])'


def test_rendering_is_deterministic() -> None:
    assert all(render(d) == render(d) and json.loads(render(d))["uid"] == d.uid for d in DASHBOARDS)


def test_the_overview_puts_the_job_with_most_violation_seconds_first() -> None:
    board = build(OVERVIEW)
    first = board["panels"][0]  # type: ignore[index]
    assert first["type"] == "bargauge" and first["title"].startswith("QoS-violation seconds per job")
    target = first["targets"][0]
    assert target["expr"].startswith("sort_desc(sum by (job_name) (increase(chronos_qos_violation_seconds_total")
    assert target["instant"] is True, "one bar per job, in the query's order"
