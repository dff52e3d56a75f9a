"""`chronos job list` on a narrow terminal: the job ids, which the hints printed next need, come out whole."""

from __future__ import annotations

from rich.console import Console

from chronos.cli.job_commands import jobs_table
from chronos.flink.replies import JobSummary


def _job(jid: str, name: str, start: int) -> JobSummary:
    return JobSummary.model_validate({"jid": jid, "name": name, "state": "RUNNING", "start-time": start,
                                      "end-time": -1, "duration": 123_000})


def test_ids_are_never_cut_at_80_columns_and_the_newest_job_comes_first() -> None:
    old, new = "a" * 32, "eebce1827e9ea0f4744c4640352b1c0f"
    jobs = [_job(old, "chronos-vehicle-stats-with-a-very-long-name-indeed", 1), _job(new, "chronos-speeding-zones", 2)]
    console = Console(width=80, record=True)
    console.print(jobs_table(jobs))
    text = console.export_text()
    assert new in text and old in text, text
    assert "…" not in text
    assert text.index(new) < text.index(old)
