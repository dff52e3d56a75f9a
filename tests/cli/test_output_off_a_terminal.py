"""What chronos prints where no one watches a terminal: a file, a pipe, CI's log. Tables keep their whole values
(not a terminal's 80 columns of "1,…"), a stream of JSON objects is one object per line, and `job stop` takes the
word Flink's own CLI uses for stopping without a savepoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from chronos.stack.ports import free_ports
from tests.support.cli import assert_one_line_error, chronos

PROFILE = Path(__file__).parents[2] / "bench" / "results" / "side_by_side_2" / "busy_trial_22k" / "profile.db"


def test_a_report_written_to_a_file_keeps_every_value_whole(tmp_path: Path) -> None:
    db = tmp_path / "profile.db"
    shutil.copyfile(PROFILE, db)
    report = chronos("profile", "report", "--db", str(db), env={"PATH": "/usr/bin:/bin"})  # no COLUMNS: not a terminal
    assert report.returncode == 0, report.stderr
    assert "…" not in report.stdout, report.stdout
    assert "replayed" in report.stdout and "catch-up s" in report.stdout, "the last columns' headers whole"
    runs = json.loads(chronos("profile", "report", "--db", str(db), "--json").stdout)["runs"]
    assert all(f"{run['throughput']:,.0f}" in report.stdout for run in runs), "each run's throughput in one piece"


def test_the_width_asked_for_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "profile.db"
    shutil.copyfile(PROFILE, db)
    narrow = chronos("profile", "report", "--db", str(db), env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 100 and "…" in narrow.stdout


def test_job_stop_takes_cancel_for_no_savepoint() -> None:
    url = f"http://127.0.0.1:{free_ports(1)[0]}"
    assert_one_line_error(chronos("job", "stop", "--cancel", "a" * 32, "--rest-url", url), "cannot reach the Flink REST API")
