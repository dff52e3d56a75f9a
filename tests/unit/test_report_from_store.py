"""`chronos report --db`: the views the tuner's journal can fill are drawn from it (violation share
from the running totals, interval, latency, recovery, rate, downtime); the others say they need
Prometheus; the CLI writes one PNG per dashboard and per view and refuses a missing database in one line.
(From a real Prometheus after a real run: tests/integration/test_dashboards.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from chronos.metrics.views import DASHBOARDS, INTERNALS, QOS
from chronos.report.from_store import StoreViews
from chronos.tune.journal import DecisionRecord, LiveRecovery, TuneJournal
from tests.support.cli import assert_one_line_error, chronos

T0 = 1_790_000_000_000  # 2026-09, before any run of this test


def journal_of_a_run(path: Path) -> TuneJournal:
    journal = TuneJournal(path)
    for i in range(10):
        interval = 30.0 if i < 5 else 10.0
        journal.record_decision(DecisionRecord(
            T0 + i * 30_000, "fleet", "j1", "retune" if i == 5 else "keep", interval, interval, True, "recovery", "r",
            "e", observed_p99_s=0.8 + i / 100, input_rate=1000.0 + 500 * i, forecast_rate=1200.0 + 500 * i,
            predicted_latency_s=0.9, predicted_recovery_s=40.0 - i, target_latency_s=1.0, target_recovery_s=60.0,
            latency_violation_s=0.0, recovery_violation_s=3.0 * i))
    entry = journal.open_retune("fleet", "j1", 30_000, 10_000, T0 + 150_000, "recovery binds")
    journal.advance(entry.retune_id, "verified", T0 + 153_000, new_job_id="j2", downtime_s=2.7)
    journal.record_recovery(LiveRecovery("fleet", T0 + 200_000, 10_000, 3500.0, 42.0))
    return journal


def test_the_store_fills_the_views_it_has_data_for(tmp_path: Path) -> None:
    views = StoreViews(journal_of_a_run(tmp_path / "chronos.db"))
    panels, markers = views.dashboard(QOS, "fleet", T0, T0 + 10**6)
    by_key = {p.view.key: p for p in panels}
    violations = {c.label: c for c in by_key["violations"].curves}
    assert violations["recovery"].values[0] == 3.0 / 30, "3 s of violation per 30 s decision period"
    assert set(violations["latency"].values) == {0.0}
    interval = {c.label: c.values for c in by_key["interval"].curves}
    assert interval["in force"][0] == 30.0 and interval["in force"][-1] == 10.0
    recovery = {c.label: c.values for c in by_key["recovery"].curves}
    assert recovery["measured"] == (42.0,) and recovery["target"][0] == 60.0
    totals = {c.label: c.values for c in by_key["violation-totals"].curves}
    assert totals == {"latency": (0.0,), "recovery": (27.0,)}, "seconds in the range: last total - first"
    assert [m.text for m in markers] == ["retune verified", "failure"]
    internals, _ = views.dashboard(INTERNALS, "fleet", T0, T0 + 10**6)
    downtime = next(p for p in internals if p.view.key == "retune-downtime")
    assert downtime.curves[0].values == (2.7,)
    size = next(p for p in internals if p.view.key == "checkpoint-size")
    assert size.empty and "Prometheus" in size.note


def test_the_report_command_draws_every_dashboard_and_view(tmp_path: Path) -> None:
    db = tmp_path / "chronos.db"
    journal_of_a_run(db).close()
    result = chronos("report", "--db", str(db), "--since", "5000h", "--out", str(tmp_path / "report"), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["job"] == "fleet"
    files = [Path(f) for f in report["files"]]
    assert (tmp_path / "report" / "chronos-qos.png") in files and (tmp_path / "report" / "chronos-internals.png") in files
    assert len(files) == len(DASHBOARDS) + sum(len(d.views) for d in DASHBOARDS)
    assert all(f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5_000 for f in files)
    assert any(e.startswith("checkpoint-duration") for e in report["empty"])


def test_bad_report_input_gets_one_line(tmp_path: Path) -> None:
    assert_one_line_error(chronos("report", "--db", str(tmp_path / "none.db")), "no tuner database")
    assert_one_line_error(chronos("report", "--prometheus", "http://127.0.0.1:9"), "cannot reach Prometheus")
    empty = tmp_path / "empty.db"
    TuneJournal(empty).close()
    assert_one_line_error(chronos("report", "--db", str(empty)), "0 tuned jobs")
