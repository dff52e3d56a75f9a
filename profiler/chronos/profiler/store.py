"""The profile store: one SQLite file holding every run, its configuration, steady-state figures,
recoveries and the raw signal samples needed to refit models later.

The schema is versioned (`chronos_meta.schema_version`) and migrated forward on open, one script per
version; a file written by a newer chronos is refused rather than guessed at. The tables are
prefixed, so the same file can also hold the Optuna study (its own tables) that chose the runs.
"""

from __future__ import annotations

import json
from dataclasses import astuple
from pathlib import Path
from typing import Any

from chronos.errors import InvalidInput
from chronos.model import FaultRecord, RecoveryMeasurement, SignalSample
from chronos.profiler.input_sample import InputSample
from chronos.profiler.live_watch import LiveImpact
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.settings import ProfileSettings
from chronos.sqlite_schema import VersionedDatabase, stored_pairs

MIGRATIONS: tuple[str, ...] = (
    # version 1
    """
    CREATE TABLE chronos_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE chronos_profiles (
        profile_id TEXT PRIMARY KEY, job_name TEXT NOT NULL, created_ms INTEGER NOT NULL,
        settings_json TEXT NOT NULL
    );
    CREATE TABLE chronos_runs (
        run_id TEXT PRIMARY KEY,
        profile_id TEXT NOT NULL REFERENCES chronos_profiles(profile_id),
        trial_number INTEGER NOT NULL, interval_ms INTEGER NOT NULL, load_scale REAL NOT NULL,
        load_rate REAL NOT NULL, status TEXT NOT NULL, started_ms INTEGER NOT NULL,
        ended_ms INTEGER NOT NULL, error TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE chronos_steady_state (
        run_id TEXT PRIMARY KEY REFERENCES chronos_runs(run_id),
        throughput REAL, p50_ms REAL, p95_ms REAL, p99_ms REAL, checkpoint_duration_ms REAL,
        checkpoint_size_bytes REAL, taskmanager_cpu_pct REAL
    );
    CREATE TABLE chronos_recoveries (
        run_id TEXT NOT NULL REFERENCES chronos_runs(run_id), seq INTEGER NOT NULL,
        fault_kind TEXT NOT NULL, fault_target TEXT NOT NULL, injected_wall_ms INTEGER NOT NULL,
        injected_mono_s REAL NOT NULL, fault_detail TEXT NOT NULL,
        interval_ms INTEGER NOT NULL, strategy TEXT NOT NULL,
        detected_ms INTEGER, running_ms INTEGER, recovered_ms INTEGER, recovery_s REAL, peak_lag REAL,
        records_reprocessed INTEGER, checkpoint_age_at_fault_ms INTEGER, restored_checkpoint_id INTEGER,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE chronos_samples (
        run_id TEXT NOT NULL REFERENCES chronos_runs(run_id), at_ms INTEGER NOT NULL,
        running INTEGER NOT NULL, throughput REAL, lag REAL, p99_ms REAL
    );
    CREATE INDEX chronos_samples_run ON chronos_samples(run_id, at_ms);
    CREATE INDEX chronos_runs_profile ON chronos_runs(profile_id, trial_number);
    """,
    # version 2: the job's own input, recorded with the profile and replayed into its copies
    """
    CREATE TABLE chronos_input_samples (
        profile_id TEXT PRIMARY KEY REFERENCES chronos_profiles(profile_id),
        job_name TEXT NOT NULL, recorded_ms INTEGER NOT NULL, records INTEGER NOT NULL, seen INTEGER NOT NULL,
        window_s REAL NOT NULL, data BLOB NOT NULL
    );
    """,
    # version 3: what explains each recovery's catch-up, and the recovery settings it was measured at
    """
    ALTER TABLE chronos_recoveries ADD COLUMN backlog_at_restart REAL;
    ALTER TABLE chronos_recoveries ADD COLUMN catch_up_input_rate REAL;
    ALTER TABLE chronos_recoveries ADD COLUMN capacity REAL;
    ALTER TABLE chronos_recoveries ADD COLUMN drain_rate REAL;
    ALTER TABLE chronos_recoveries ADD COLUMN settings_in_force TEXT NOT NULL DEFAULT '[]';
    """,
    # version 4: the recovery settings a run's cluster ran with, as a point of the profile's space
    """
    ALTER TABLE chronos_runs ADD COLUMN recovery TEXT NOT NULL DEFAULT 'live';
    """,
    # version 5: what each invocation of the profile did to the live job (chronos.profiler.live_watch)
    """
    CREATE TABLE chronos_live_impact (
        profile_id TEXT NOT NULL REFERENCES chronos_profiles(profile_id), started_ms INTEGER NOT NULL,
        p99_before_ms REAL, p99_during_ms REAL, throughput_before REAL, throughput_during REAL,
        readings_before INTEGER NOT NULL, readings_during INTEGER NOT NULL, pauses INTEGER NOT NULL,
        paused_s REAL NOT NULL, copy_niceness INTEGER NOT NULL,
        PRIMARY KEY (profile_id, started_ms)
    );
    """,
    # version 6: a run's steady window measured again after its faults (ProfileRun.repeat_steady)
    """
    CREATE TABLE chronos_repeat_steady (
        run_id TEXT NOT NULL REFERENCES chronos_runs(run_id), seq INTEGER NOT NULL,
        throughput REAL, p50_ms REAL, p95_ms REAL, p99_ms REAL, checkpoint_duration_ms REAL,
        checkpoint_size_bytes REAL, taskmanager_cpu_pct REAL,
        PRIMARY KEY (run_id, seq)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _recovery(r: Any, where: str) -> RecoveryMeasurement:
    return RecoveryMeasurement(
        fault=FaultRecord(*r[2:7]), interval_ms=r[7], strategy=r[8], detected_ms=r[9], running_ms=r[10],
        recovered_ms=r[11], recovery_s=r[12], peak_lag=r[13], records_reprocessed=r[14],
        checkpoint_age_at_fault_ms=r[15], restored_checkpoint_id=r[16], backlog_at_restart=r[17],
        catch_up_input_rate=r[18], capacity=r[19], drain_rate=r[20],
        settings_in_force=stored_pairs(r[21], f"{where}: chronos_recoveries.settings_in_force"))


class ProfileStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = VersionedDatabase(path, "chronos_meta", MIGRATIONS, "profile", foreign_keys=True)
        self._db = self._file.db
        self._lock = self._file.lock
        self._transaction = self._file.transaction
        self._read = self._file.read  # every value read back checked against its column (chronos.sqlite_schema)

    def close(self) -> None:
        self._file.close()

    @property
    def schema_version(self) -> int:
        return self._file.version

    # -- profiles -----------------------------------------------------------------------------------
    def create_profile(self, profile_id: str, job_name: str, created_ms: int, settings_json: str) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO chronos_profiles VALUES (?, ?, ?, ?)",
                       (profile_id, job_name, created_ms, settings_json))

    def profiles(self) -> list[tuple[str, str, int, str]]:
        return [tuple(r) for r in self._read("chronos_profiles", "SELECT * FROM chronos_profiles ORDER BY created_ms")]

    # -- input samples ------------------------------------------------------------------------------
    def save_sample(self, profile_id: str, job_name: str, recorded_ms: int, sample: InputSample) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO chronos_input_samples VALUES (?,?,?,?,?,?,?)",
                       (profile_id, job_name, recorded_ms, len(sample.records), sample.seen, sample.window_s,
                        sample.to_bytes()))

    def sample(self, profile_id: str) -> InputSample | None:
        rows = self._read("chronos_input_samples", "SELECT data FROM chronos_input_samples WHERE profile_id=?",
                          (profile_id,))
        return InputSample.from_bytes(bytes(rows[0][0])) if rows else None

    def latest_sample_profile(self, job_name: str) -> str | None:
        """The newest profile of this job that has an input sample stored."""
        rows = self._read("chronos_input_samples", "SELECT profile_id FROM chronos_input_samples WHERE job_name=? "
                          "ORDER BY recorded_ms DESC LIMIT 1", (job_name,))
        return str(rows[0][0]) if rows else None

    # -- the live job while profiled ----------------------------------------------------------------
    def save_live_impact(self, profile_id: str, started_ms: int, live: LiveImpact, copy_niceness: int) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO chronos_live_impact VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (profile_id, started_ms, *astuple(live), copy_niceness))

    def live_impacts(self, profile_id: str) -> list[tuple[int, LiveImpact, int]]:
        """(started ms, what it did to the live job, the copies' niceness) per invocation, oldest first."""
        rows = self._read("chronos_live_impact", "SELECT * FROM chronos_live_impact WHERE profile_id=? ORDER BY "
                          "started_ms", (profile_id,))
        return [(int(r[1]), LiveImpact(*r[2:10]), int(r[10])) for r in rows]

    # -- runs ---------------------------------------------------------------------------------------
    def save_run(self, run: ProfileRun) -> None:
        """One transaction per run: a run is in the store whole, or not at all."""
        with self._transaction() as db:
            db.execute("DELETE FROM chronos_samples WHERE run_id=?", (run.run_id,))
            db.execute("DELETE FROM chronos_recoveries WHERE run_id=?", (run.run_id,))
            db.execute("DELETE FROM chronos_steady_state WHERE run_id=?", (run.run_id,))
            db.execute("DELETE FROM chronos_repeat_steady WHERE run_id=?", (run.run_id,))
            db.execute("INSERT OR REPLACE INTO chronos_runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (run.run_id, run.profile_id, run.trial_number, run.config.interval_ms, run.config.load_scale,
                        run.load_rate, run.status, run.started_ms, run.ended_ms, run.error, run.config.recovery))
            if run.steady is not None:
                db.execute("INSERT INTO chronos_steady_state VALUES (?,?,?,?,?,?,?,?)", (run.run_id, *astuple(run.steady)))
            db.executemany("INSERT INTO chronos_repeat_steady VALUES (?,?,?,?,?,?,?,?,?)",
                           [(run.run_id, seq, *astuple(again)) for seq, again in enumerate(run.repeat_steady)])
            for seq, m in enumerate(run.recoveries):
                db.execute("INSERT INTO chronos_recoveries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           (run.run_id, seq, *astuple(m.fault), m.interval_ms, m.strategy, m.detected_ms,
                            m.running_ms, m.recovered_ms, m.recovery_s, m.peak_lag, m.records_reprocessed,
                            m.checkpoint_age_at_fault_ms, m.restored_checkpoint_id, m.backlog_at_restart,
                            m.catch_up_input_rate, m.capacity, m.drain_rate,
                            json.dumps([list(kv) for kv in m.settings_in_force])))
            db.executemany("INSERT INTO chronos_samples VALUES (?,?,?,?,?,?)",
                           [(run.run_id, s.at_ms, int(s.running), s.throughput, s.lag, s.p99_ms) for s in run.samples])

    def runs(self, profile_id: str | None = None, *, with_samples: bool = False) -> list[ProfileRun]:
        query = "SELECT * FROM chronos_runs" + (" WHERE profile_id=?" if profile_id else "") + " ORDER BY trial_number, run_id"
        with self._lock:
            rows = self._read("chronos_runs", query, (profile_id,) if profile_id else ())
            return [self._run(row, with_samples) for row in rows]

    def _run(self, row: Any, with_samples: bool) -> ProfileRun:
        run_id = str(row[0])
        steady_rows = self._read("chronos_steady_state", "SELECT * FROM chronos_steady_state WHERE run_id=?", (run_id,))
        steady_row = steady_rows[0] if steady_rows else None
        where = f"the profile database {self.path}"
        recoveries = tuple(_recovery(r, where) for r in self._read(
            "chronos_recoveries", "SELECT * FROM chronos_recoveries WHERE run_id=? ORDER BY seq", (run_id,)))
        again = tuple(SteadyState(*r[2:]) for r in self._read(
            "chronos_repeat_steady", "SELECT * FROM chronos_repeat_steady WHERE run_id=? ORDER BY seq", (run_id,)))
        samples: tuple[SignalSample, ...] = ()
        if with_samples:
            samples = tuple(SignalSample(r[0], bool(r[1]), r[2], r[3], r[4]) for r in self._read(
                "chronos_samples", "SELECT at_ms, running, throughput, lag, p99_ms FROM chronos_samples WHERE run_id=? "
                "ORDER BY at_ms", (run_id,)))
        return ProfileRun(
            run_id=run_id, profile_id=str(row[1]), trial_number=int(row[2]),
            config=RunConfig(int(row[3]), float(row[4]), str(row[10])),
            load_rate=float(row[5]), status=str(row[6]),
            started_ms=int(row[7]), ended_ms=int(row[8]), error=str(row[9]),
            steady=SteadyState(*steady_row[1:]) if steady_row else None,
            recoveries=recoveries, samples=samples, repeat_steady=again,
        )


def latest_profile(store: ProfileStore, profile_id: str | None) -> tuple[str, ProfileSettings]:
    """(id, settings) of the named profile, or of the most recent one in the store."""
    profiles = store.profiles()
    if profile_id is not None:
        profiles = [p for p in profiles if p[0] == profile_id]
        if not profiles:
            raise InvalidInput(f"no profile {profile_id} in {store.path}")
    if not profiles:
        raise InvalidInput(f"no profile in {store.path} yet; run `chronos profile run` first")
    chosen = profiles[-1]
    return str(chosen[0]), ProfileSettings.from_json(chosen[3], str(chosen[0]))
