"""A store read back (the profile store, the tuner's journal) is checked value by value against the columns chronos
declared: a file edited or damaged by hand (text in a number, an infinity, a 64-bit time no date reaches, a NULL where
none goes, settings that are not the pairs chronos writes, a table dropped) is refused in one line naming the column,
never a TypeError in a report or an infinity in a model fit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import ProfileStore
from chronos.tune.journal import DecisionRecord, LiveRecovery, TuneJournal

JOB = "0123456789abcdef0123456789abcdef"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    path = tmp_path / "profile.db"
    written = ProfileStore(path)
    written.create_profile("p1", "fleet", 1_000, "{}")
    recovery = RecoveryMeasurement(FaultRecord("kill-taskmanager", "tm", 2_000, 1.0, ""), 5_000, "worst-case", 3_000,
                                   8_000, 9_000, 7.0, 10.0, 0, 1_000, 3, settings_in_force=(("heartbeat.timeout", "5 s"),))
    written.save_run(ProfileRun("r1", "p1", 0, RunConfig(5_000, 1.0), 1000.0, "completed", 1_000, 9_000,
                                SteadyState(1000.0, 10.0, 20.0, 30.0, 50.0, 1e6, 40.0), (recovery,)))
    written.close()
    return path


def changed(path: Path, sql: str) -> ProfileStore:
    with sqlite3.connect(path) as db:
        db.executescript(sql)
    return ProfileStore(path)


def test_what_chronos_wrote_reads_back_whole(store: Path) -> None:
    (run,) = ProfileStore(store).runs("p1")
    assert run.recoveries[0].recovery_s == 7.0 and run.recoveries[0].settings_in_force == (("heartbeat.timeout", "5 s"),)


@pytest.mark.parametrize(("sql", "says"), [
    ("UPDATE chronos_runs SET interval_ms = 'soon'", "holds 'soon' in chronos_runs.interval_ms"),
    ("UPDATE chronos_runs SET load_rate = 'x'", "chronos_runs.load_rate"),
    ("UPDATE chronos_recoveries SET recovery_s = 9e999", "holds inf in chronos_recoveries.recovery_s"),
    ("UPDATE chronos_recoveries SET peak_lag = 1e300", "chronos_recoveries.peak_lag"),
    ("UPDATE chronos_runs SET started_ms = 9223372036854775807", "chronos_runs.started_ms"),
    ("UPDATE chronos_runs SET started_ms = 253402300800000", "chronos_runs.started_ms"),
    ("UPDATE chronos_steady_state SET p99_ms = X'00'", "chronos_steady_state.p99_ms"),
    ("UPDATE chronos_runs SET status = X'636f6d706c65746564'", "in chronos_runs.status"),
    ("UPDATE chronos_recoveries SET settings_in_force = '[[1, 2]]'", "not a list of [key, value] pairs"),
    ("UPDATE chronos_recoveries SET settings_in_force = '[[\"a\"'", "settings_in_force is not valid JSON"),
    ("DROP TABLE chronos_samples; DROP TABLE chronos_repeat_steady; DROP TABLE chronos_recoveries; "
     "DROP TABLE chronos_steady_state; DROP TABLE chronos_runs", "does not read (no such table: chronos_runs)"),
])
def test_a_value_chronos_never_writes_is_one_line_naming_its_column(store: Path, sql: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) as raised:
        changed(store, sql).runs("p1")
    assert "\n" not in str(raised.value) and str(store) in str(raised.value)


def test_the_journal_is_read_back_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = TuneJournal(path)
    journal.record_decision(DecisionRecord(1_000, "fleet", JOB, "keep", 10.0, None, True, "recovery", "r", "e"))
    journal.record_recovery(LiveRecovery("fleet", 2_000, 10_000, 100.0, 12.0))
    journal.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE chronos_decisions SET interval_s = 'x'")
        db.execute("UPDATE chronos_live_recoveries SET settings_in_force = '{}'")
    journal = TuneJournal(path)
    with pytest.raises(InvalidInput, match=r"holds 'x' in chronos_decisions\.interval_s"):
        journal.decisions("fleet")
    with pytest.raises(InvalidInput, match="not a list of"):
        journal.recoveries("fleet")
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE chronos_cadences")
    with pytest.raises(InvalidInput, match="no such table: chronos_cadences"):
        journal.cadences("fleet")


def test_a_stored_input_sample_is_inflated_no_further_than_any_chronos_writes() -> None:
    import zlib

    from chronos.profiler.input_sample import InputSample

    head = b'{"window_s": 1, "seen": 1, "trace": [[0], [1]]}'
    for blob, says in ((zlib.compress(b" " * (2 << 20)), "inflates past 1 MiB"),
                       (zlib.compress(head.replace(b"1,", b"1e400,", 1)), "the number 1e400 is out of range"),
                       (zlib.compress(head + b"\n" + b"[" * 100_000), "RecursionError"),
                       (b"\x00\xff", "incorrect header check")):
        with pytest.raises(InvalidInput, match=says):
            InputSample.from_bytes(blob, max_bytes=1 << 20)
