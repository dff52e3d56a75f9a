"""The profile store: a run goes in whole and comes back equal; the schema is versioned."""

import sqlite3
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.model import FaultRecord, RecoveryMeasurement, SignalSample
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import SCHEMA_VERSION, ProfileStore


def a_run(run_id: str = "r1", trial: int = 0, status: str = "completed") -> ProfileRun:
    fault = FaultRecord("kill-taskmanager", "pid 42", 1_000_000, 12.5, "killed pid 42, started pid 43")
    recovery = RecoveryMeasurement(fault, 5000, "WorstCase", 1_012_000, 1_020_000, 1_031_000, 31.0, 9000.0, 4000,
                                   4000, 7, backlog_at_restart=8000.0, catch_up_input_rate=3000.0, capacity=5100.0,
                                   drain_rate=2050.0, settings_in_force=(("heartbeat.timeout", "10s"),))
    lost = RecoveryMeasurement(fault, 5000, "WorstCase", 1_012_000, None, None, None, None, 3900, 4000, None)
    return ProfileRun(
        run_id=run_id, profile_id="p1", trial_number=trial, config=RunConfig(5000, 1.5), load_rate=3000.0,
        status=status, started_ms=999_000, ended_ms=1_100_000,
        steady=SteadyState(2990.0, 800.0, 1500.0, 2100.0, 95.0, 120_000.0, 63.5),
        recoveries=(recovery, lost),
        samples=(SignalSample(1, True, 3000.0, 10.0, 2000.0), SignalSample(2, False, None, None, None)),
        repeat_steady=(SteadyState(3010.0, 790.0, 1450.0, 2300.0, 90.0, 121_000.0, 62.0),),
    )


def test_a_run_comes_back_exactly_as_it_was_saved(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profile.db")
    store.create_profile("p1", "demo", 1, "{}")
    run = a_run()
    store.save_run(run)
    assert store.runs("p1", with_samples=True) == [run]
    assert store.runs("p1")[0].samples == (), "samples only on request: they are the bulk of the file"


def test_saving_a_run_again_replaces_it_whole(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profile.db")
    store.create_profile("p1", "demo", 1, "{}")
    store.save_run(a_run(status="failed"))
    store.save_run(a_run())
    (run,) = store.runs(with_samples=True)
    assert run.status == "completed" and len(run.recoveries) == 2 and len(run.samples) == 2


def test_a_run_without_steady_state_or_recoveries_is_stored_too(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profile.db")
    store.create_profile("p1", "demo", 1, "{}")
    failed = ProfileRun("r2", "p1", 3, RunConfig(2000, 1.0), 2000.0, "failed", 1, 2, error="job never RUNNING")
    store.save_run(failed)
    assert store.runs("p1") == [failed]


def test_the_schema_is_versioned_and_reopening_migrates_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "profile.db"
    ProfileStore(path).close()
    store = ProfileStore(path)
    assert store.schema_version == SCHEMA_VERSION == 6


def test_a_newer_schema_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "profile.db"
    ProfileStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE chronos_meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(InvalidInput, match=f"schema v99; this chronos reads up to v{SCHEMA_VERSION}"):
        ProfileStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "profile.db"
    path.write_text("not sqlite at all, " * 100)
    with pytest.raises(InvalidInput, match="is not a chronos profile database"):
        ProfileStore(path)


def test_the_recoveries_stored_in_every_profile_fit_the_phase_model(tmp_path: Path) -> None:
    from dataclasses import replace

    from chronos.cli.wiring import measured_phase_model

    assert measured_phase_model(tmp_path / "none.db") is None, "no store, no model (the prior is used)"
    store = ProfileStore(tmp_path / "profile.db")
    store.create_profile("p1", "demo", 1, "{}")
    store.create_profile("p2", "other", 2, "{}")
    store.save_run(a_run())
    other = a_run("r2")
    store.save_run(replace(other, profile_id="p2", recoveries=tuple(
        replace(m, capacity=m.capacity * 10) if m.capacity else m for m in other.recoveries)))
    store.close()
    model = measured_phase_model(tmp_path / "profile.db")
    assert model is not None and model.observations == 2, "the recovered ones, one per job"

    from chronos.tune.journal import LiveRecovery, TuneJournal

    journal = TuneJournal(tmp_path / "profile.db")
    journal.record_recovery(LiveRecovery("demo", 1_000_000, 5000, 3000.0, 12.0, running_ms=1_004_000,
                                         catch_up_input_rate=3000.0, capacity=5100.0))
    journal.record_recovery(LiveRecovery("demo", 2_000_000, 5000, 3000.0, None))  # never recovered: no phases
    journal.close()
    with_live = measured_phase_model(tmp_path / "profile.db")
    assert with_live is not None and with_live.observations == 3, "the tuner's live recoveries too"
