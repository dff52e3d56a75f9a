"""One set of assertions about the journal, held by the SQLite `TuneJournal` and its in-memory twin: a
retune advances step by step keeping what earlier steps wrote; the newest unfinished retune is found; a
rollback is a step; decisions come back oldest first, windowed and limited; old decisions fold into daily
summaries; live recoveries are kept once per failure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chronos.tune.journal import DecisionRecord, Journal, LiveLatency, LiveRecovery, TuneJournal
from chronos.tune.memory_journal import MemoryJournal

DAY_MS = 86_400_000


@pytest.fixture(params=["sqlite", "memory"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    made: Journal = TuneJournal(tmp_path / "journal.db") if request.param == "sqlite" else MemoryJournal()
    yield made
    made.close()


def decision(at_ms: int, action: str = "keep", job: str = "fleet") -> DecisionRecord:
    return DecisionRecord(at_ms, job, "j1", action, 30.0, None, True, "recovery", "", "")


def test_a_retune_advances_step_by_step_and_keeps_what_earlier_steps_wrote(journal: Journal) -> None:
    entry = journal.open_retune("fleet", "j1", 30_000, 10_000, 1000, "recovery binds")
    assert (entry.step, entry.attempts, entry.finished) == ("decided", 0, False)
    journal.advance(entry.retune_id, "savepoint", 2000, savepoint="/sp/1")
    journal.advance(entry.retune_id, "savepoint", 2500, attempted=True, note="submission failed: boom")
    after = journal.advance(entry.retune_id, "resubmitted", 3000, new_job_id="j2", attempted=True)
    assert (after.savepoint, after.new_job_id, after.attempts, after.note) == ("/sp/1", "j2", 2, "submission failed: boom")
    done = journal.advance(entry.retune_id, "verified", 4000, downtime_s=3.5)
    assert done.finished and done.downtime_s == 3.5 and done.updated_ms == 4000 and done.decided_ms == 1000
    assert journal.retune(entry.retune_id) == done and journal.unfinished("fleet") is None


def test_the_newest_unfinished_retune_of_a_job_is_found_and_a_rollback_is_a_step(journal: Journal) -> None:
    first = journal.open_retune("fleet", "j1", 30_000, 10_000, 1000, "")
    journal.advance(first.retune_id, "abandoned", 1500)
    other = journal.open_retune("zones", "z1", 30_000, 10_000, 1600, "")
    second = journal.open_retune("fleet", "j1", 30_000, 5000, 2000, "")
    back = journal.advance(second.retune_id, "rolling-back", 2500, savepoint="/sp/2")
    assert journal.unfinished("fleet") == back and back.rolling_back and back.interval_to_submit_ms == 30_000
    assert [r.retune_id for r in journal.retunes("fleet")] == [first.retune_id, second.retune_id]
    assert [r.retune_id for r in journal.retunes()] == [first.retune_id, other.retune_id, second.retune_id]
    assert journal.job_names() == ["fleet", "zones"]


def test_decisions_come_back_oldest_first_windowed_and_limited(journal: Journal) -> None:
    for at in (3000, 1000, 2000, 4000):
        journal.record_decision(decision(at))
    journal.record_decision(decision(2500, job="zones"))
    assert [d.at_ms for d in journal.decisions("fleet")] == [1000, 2000, 3000, 4000]
    assert [d.at_ms for d in journal.decisions("fleet", since_ms=2000)] == [2000, 3000, 4000]
    assert [d.at_ms for d in journal.decisions("fleet", limit=2)] == [3000, 4000], "the newest, oldest first"
    assert journal.decisions("fleet")[0] == decision(1000)


def test_old_decisions_fold_into_daily_summaries(journal: Journal) -> None:
    for at, action in ((10, "keep"), (20, "retune"), (DAY_MS + 10, "keep"), (2 * DAY_MS + 10, "keep")):
        journal.record_decision(decision(at, action))
    assert journal.prune_decisions(2 * DAY_MS) == 3
    journal.record_decision(decision(30, "retune"))
    assert journal.prune_decisions(2 * DAY_MS) == 1, "merged into the day already summarized"
    assert journal.decision_days("fleet") == [("1970-01-01", 3, 2), ("1970-01-02", 1, 0)]
    assert [d.at_ms for d in journal.decisions("fleet")] == [2 * DAY_MS + 10]


def test_a_live_recovery_is_kept_once_per_failure(journal: Journal) -> None:
    journal.record_recovery(LiveRecovery("fleet", 2000, 30_000, 1500.0, None))
    journal.record_recovery(LiveRecovery("fleet", 1000, 30_000, 1500.0, 42.0))
    journal.record_recovery(LiveRecovery("fleet", 2000, 30_000, 1500.0, 55.0))  # measured at last
    assert journal.recoveries("fleet") == [LiveRecovery("fleet", 1000, 30_000, 1500.0, 42.0),
                                           LiveRecovery("fleet", 2000, 30_000, 1500.0, 55.0)]
    assert journal.recoveries("zones") == []


def test_a_live_recovery_keeps_its_phases_what_explains_its_catch_up_and_the_settings_it_was_measured_at(
        journal: Journal) -> None:
    measured = LiveRecovery("fleet", 1000, 5_000, 2000.0, 14.0, running_ms=4500, backlog_at_restart=9000.0,
                            catch_up_input_rate=2000.0, capacity=8000.0, drain_rate=5500.0,
                            settings_in_force=(("heartbeat.timeout", "10s"), ("chronos.spare-taskmanagers", "1")))
    journal.record_recovery(measured)
    assert journal.recoveries("fleet") == [measured]
    journal.record_recovery(LiveRecovery("zones", 1000, 5_000, 20.0, None))
    assert journal.recovery_jobs() == ["fleet", "zones"]


def test_a_cadence_change_is_decided_then_in_force_once_and_the_newest_is_the_one_held(journal: Journal) -> None:
    first = journal.open_cadence("fleet", "j1", None, 5_000, 120_000, 1000, "pace at 5 s")
    assert (first.from_ms, first.to_ms, first.fallback_ms, first.in_force_ms) == (None, 5_000, 120_000, None)
    assert journal.cadence_in_force(first.cadence_id, 6000).in_force_ms == 6000
    assert journal.cadence_in_force(first.cadence_id, 9000).in_force_ms == 6000, "in force from its first checkpoint"
    second = journal.open_cadence("fleet", "j1", 5_000, 15_000, 120_000, 10_000, "lengthen")
    journal.open_cadence("other", "j9", None, 2_000, 60_000, 11_000, "another job")
    held = journal.cadences("fleet")
    assert [c.cadence_id for c in held] == [first.cadence_id, second.cadence_id]
    assert held[-1].to_ms == 15_000 and held[-1].in_force_ms is None


def test_a_window_of_the_live_job_s_p99_is_kept_once_and_read_back_oldest_first(journal: Journal) -> None:
    journal.record_latency(LiveLatency("fleet", 9000, 10_000, 2000.0, 4100.0))
    journal.record_latency(LiveLatency("fleet", 5000, 10_000, 1900.0, 3900.0))
    journal.record_latency(LiveLatency("fleet", 9000, 10_000, 2000.0, 4200.0))  # the same window again
    assert journal.latencies("fleet") == [LiveLatency("fleet", 5000, 10_000, 1900.0, 3900.0),
                                          LiveLatency("fleet", 9000, 10_000, 2000.0, 4200.0)]
    assert journal.latencies("zones") == []
