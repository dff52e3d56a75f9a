"""The tuner's memory in SQLite: every retune advanced step by step, every decision, every failure of
the live job seen and what its recovery cost.

A retune is written *before* it acts and advanced after each step (decided -> savepoint ->
resubmitted -> verified, or rolled-back / abandoned), so a tuner that dies anywhere leaves an entry
that says exactly what is done and what is not; the next tuner finishes it from there. The tables
share the profile database (their own prefix and schema version), so one file holds the profile and
everything learned from the live job since.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from chronos.sqlite_schema import VersionedDatabase, stored_pairs

Step = Literal["decided", "savepoint", "resubmitted", "verified", "rolling-back", "rollback-resubmitted",
               "rolled-back", "abandoned"]
FINAL_STEPS: frozenset[str] = frozenset({"verified", "rolled-back", "abandoned"})
# The steps of a retune on its way back to the previous interval, from the same savepoint: a failed submission
# or a new job that died on restore sends it there (the journal says so in its step, not in a note).
ROLLBACK_STEPS: frozenset[str] = frozenset({"rolling-back", "rollback-resubmitted", "rolled-back"})
# The steps at which a savepoint is on record and a submission is the next thing to do.
TO_SUBMIT: frozenset[str] = frozenset({"savepoint", "rolling-back"})

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE chronos_tune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE chronos_retunes (
        retune_id INTEGER PRIMARY KEY AUTOINCREMENT, job_name TEXT NOT NULL, old_job_id TEXT NOT NULL,
        from_interval_ms INTEGER NOT NULL, to_interval_ms INTEGER NOT NULL, step TEXT NOT NULL,
        savepoint TEXT, new_job_id TEXT, attempts INTEGER NOT NULL DEFAULT 0,
        decided_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, downtime_s REAL,
        explanation TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE chronos_decisions (
        at_ms INTEGER NOT NULL, job_name TEXT NOT NULL, job_id TEXT NOT NULL, action TEXT NOT NULL,
        interval_s REAL NOT NULL, wanted_s REAL, feasible INTEGER NOT NULL, binding TEXT NOT NULL,
        reason TEXT NOT NULL, explanation TEXT NOT NULL
    );
    CREATE TABLE chronos_live_recoveries (
        job_name TEXT NOT NULL, failed_ms INTEGER NOT NULL, interval_ms INTEGER NOT NULL, rate REAL NOT NULL,
        recovery_s REAL, PRIMARY KEY (job_name, failed_ms)
    );
    CREATE INDEX chronos_retunes_job ON chronos_retunes(job_name, retune_id);
    CREATE INDEX chronos_decisions_job ON chronos_decisions(job_name, at_ms);
    """,
    # v2: what each decision saw, so `chronos report --db` can draw the QoS views without Prometheus.
    """
    ALTER TABLE chronos_decisions ADD COLUMN observed_p99_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN input_rate REAL;
    ALTER TABLE chronos_decisions ADD COLUMN forecast_rate REAL;
    ALTER TABLE chronos_decisions ADD COLUMN predicted_latency_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN predicted_recovery_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN target_latency_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN target_recovery_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN latency_violation_s REAL;
    ALTER TABLE chronos_decisions ADD COLUMN recovery_violation_s REAL
    """,
    # v3: decisions older than the retention are folded into one row per job and UTC day before they go.
    """
    CREATE TABLE chronos_decision_days (
        job_name TEXT NOT NULL, day TEXT NOT NULL, decisions INTEGER NOT NULL, retunes INTEGER NOT NULL,
        infeasible INTEGER NOT NULL, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
        min_interval_s REAL, max_interval_s REAL, latency_violation_s REAL, recovery_violation_s REAL,
        PRIMARY KEY (job_name, day)
    )
    """,
    # v4: a rollback is a step of its own (it was a "rollback" prefix of the note).
    """
    UPDATE chronos_retunes SET step = 'rolling-back' WHERE step = 'savepoint' AND note LIKE 'rollback%';
    UPDATE chronos_retunes SET step = 'rollback-resubmitted' WHERE step = 'resubmitted' AND note LIKE 'rollback%'
    """,
    # v5: cadence changes of paced jobs (no restart: decided, then in force at the first checkpoint at the new cadence).
    """
    CREATE TABLE chronos_cadences (
        cadence_id INTEGER PRIMARY KEY AUTOINCREMENT, job_name TEXT NOT NULL, job_id TEXT NOT NULL,
        from_ms INTEGER, to_ms INTEGER NOT NULL, fallback_ms INTEGER NOT NULL, decided_ms INTEGER NOT NULL,
        in_force_ms INTEGER, explanation TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX chronos_cadences_job ON chronos_cadences(job_name, cadence_id)
    """,
    # v6: a live recovery's phases after Flink saw it, what explains its catch-up, and the settings in force.
    """
    ALTER TABLE chronos_live_recoveries ADD COLUMN running_ms INTEGER;
    ALTER TABLE chronos_live_recoveries ADD COLUMN backlog_at_restart REAL;
    ALTER TABLE chronos_live_recoveries ADD COLUMN catch_up_input_rate REAL;
    ALTER TABLE chronos_live_recoveries ADD COLUMN capacity REAL;
    ALTER TABLE chronos_live_recoveries ADD COLUMN drain_rate REAL;
    ALTER TABLE chronos_live_recoveries ADD COLUMN settings_in_force TEXT NOT NULL DEFAULT '[]'
    """,
    # v7: windows of the live job's own p99 at one interval (chronos.tune.live_latency), points of its latency model.
    """
    CREATE TABLE chronos_live_latencies (
        job_name TEXT NOT NULL, ended_ms INTEGER NOT NULL, interval_ms INTEGER NOT NULL, rate REAL NOT NULL,
        p99_ms REAL NOT NULL, PRIMARY KEY (job_name, ended_ms)
    )
    """,
)
# Decisions kept one by one; older ones live on as daily summaries (a decision every 30 s is ~2,900 rows a day).
DECISION_RETENTION_MS = 14 * 86_400_000
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class Retune:
    retune_id: int
    job_name: str
    old_job_id: str
    from_interval_ms: int
    to_interval_ms: int
    step: str
    savepoint: str | None
    new_job_id: str | None
    attempts: int
    decided_ms: int
    updated_ms: int
    downtime_s: float | None
    explanation: str
    note: str

    @property
    def finished(self) -> bool:
        return self.step in FINAL_STEPS

    @property
    def rolling_back(self) -> bool:
        return self.step in ROLLBACK_STEPS

    @property
    def interval_to_submit_ms(self) -> int:
        """The interval the next submission carries: the new one, or the previous one on the way back."""
        return self.from_interval_ms if self.rolling_back else self.to_interval_ms


@dataclass(frozen=True)
class Cadence:
    """A paced job's cadence change: chronos triggers its checkpoints `to_ms` apart from `decided_ms` on; the
    job's own configured interval (`fallback_ms`) holds whenever chronos does not. `in_force_ms`: when the first
    checkpoint triggered at this cadence completed (None: not yet)."""

    cadence_id: int
    job_name: str
    job_id: str
    from_ms: int | None  # the cadence before (None: the job was not paced)
    to_ms: int
    fallback_ms: int
    decided_ms: int
    in_force_ms: int | None
    explanation: str


@dataclass(frozen=True)
class DecisionRecord:
    """A decision and what it saw; the violation seconds are the tuner's running totals."""

    at_ms: int
    job_name: str
    job_id: str
    action: str
    interval_s: float
    wanted_s: float | None
    feasible: bool
    binding: str
    reason: str
    explanation: str
    observed_p99_s: float | None = None
    input_rate: float | None = None
    forecast_rate: float | None = None
    predicted_latency_s: float | None = None
    predicted_recovery_s: float | None = None
    target_latency_s: float | None = None
    target_recovery_s: float | None = None
    latency_violation_s: float | None = None
    recovery_violation_s: float | None = None


DECISION_COLUMNS = tuple(DecisionRecord.__dataclass_fields__)


@dataclass(frozen=True)
class LiveRecovery:
    job_name: str
    failed_ms: int
    interval_ms: int
    rate: float
    recovery_s: float | None  # None: it did not get back to steady state within the watch
    # From `failed_ms` (when Flink saw the failure: the moment it struck is not known of a live one) to every task
    # RUNNING again; what explains the catch-up after it (chronos.chaos.catch_up); the recovery settings in force.
    running_ms: int | None = None
    backlog_at_restart: float | None = None
    catch_up_input_rate: float | None = None
    capacity: float | None = None
    drain_rate: float | None = None
    settings_in_force: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LiveLatency:
    """A window of steady running at one interval and the live job's p99 over it (chronos.tune.live_latency)."""

    job_name: str
    ended_ms: int
    interval_ms: int
    rate: float
    p99_ms: float


class Journal(Protocol):
    """What the tuner, the realizers and the report keep and read: `TuneJournal` (SQLite, crash-safe) and its
    in-memory twin `chronos.tune.memory_journal.MemoryJournal`, held to one contract suite."""

    def close(self) -> None: ...
    def open_retune(self, job_name: str, old_job_id: str, from_ms: int, to_ms: int, now_ms: int,
                    explanation: str) -> Retune: ...
    def advance(self, retune_id: int, step: Step, now_ms: int, *, savepoint: str | None = None,
                new_job_id: str | None = None, downtime_s: float | None = None, note: str | None = None,
                attempted: bool = False) -> Retune: ...
    def retune(self, retune_id: int) -> Retune: ...
    def retunes(self, job_name: str | None = None) -> list[Retune]: ...
    def unfinished(self, job_name: str) -> Retune | None: ...
    def record_decision(self, record: DecisionRecord) -> None: ...
    def decisions(self, job_name: str, since_ms: int = 0, limit: int = 100_000) -> list[DecisionRecord]: ...
    def prune_decisions(self, before_ms: int) -> int: ...
    def decision_days(self, job_name: str) -> list[tuple[str, int, int]]: ...
    def job_names(self) -> list[str]: ...
    def record_recovery(self, recovery: LiveRecovery) -> None: ...
    def recoveries(self, job_name: str) -> list[LiveRecovery]: ...
    def recovery_jobs(self) -> list[str]:
        """The jobs with a live recovery recorded."""
        ...
    def record_latency(self, latency: LiveLatency) -> None: ...
    def latencies(self, job_name: str) -> list[LiveLatency]:
        """Oldest first."""
        ...
    def open_cadence(self, job_name: str, job_id: str, from_ms: int | None, to_ms: int, fallback_ms: int,
                     now_ms: int, explanation: str) -> Cadence: ...
    def cadence_in_force(self, cadence_id: int, now_ms: int) -> Cadence: ...
    def cadences(self, job_name: str) -> list[Cadence]:
        """Oldest first; the newest is the cadence a paced job is held at (a new tuner takes it over)."""
        ...


class TuneJournal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = VersionedDatabase(path, "chronos_tune_meta", MIGRATIONS, "tune")
        self._db = self._file.db
        self._lock = self._file.lock
        self._transaction = self._file.transaction
        self._read = self._file.read  # every value read back checked against its column (chronos.sqlite_schema)

    def close(self) -> None:
        self._file.close()

    # -- retunes ------------------------------------------------------------------------------------
    def open_retune(self, job_name: str, old_job_id: str, from_ms: int, to_ms: int, now_ms: int,
                    explanation: str) -> Retune:
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO chronos_retunes (job_name, old_job_id, from_interval_ms, to_interval_ms, step, "
                "decided_ms, updated_ms, explanation) VALUES (?,?,?,?,'decided',?,?,?)",
                (job_name, old_job_id, from_ms, to_ms, now_ms, now_ms, explanation))
            retune_id = int(cursor.lastrowid or 0)
        return self.retune(retune_id)

    def advance(self, retune_id: int, step: Step, now_ms: int, *, savepoint: str | None = None,
                new_job_id: str | None = None, downtime_s: float | None = None, note: str | None = None,
                attempted: bool = False) -> Retune:
        with self._transaction() as db:
            db.execute(
                "UPDATE chronos_retunes SET step=?, updated_ms=?, savepoint=COALESCE(?, savepoint), "
                "new_job_id=COALESCE(?, new_job_id), downtime_s=COALESCE(?, downtime_s), note=COALESCE(?, note), "
                "attempts=attempts+? WHERE retune_id=?",
                (step, now_ms, savepoint, new_job_id, downtime_s, note, int(attempted), retune_id))
        return self.retune(retune_id)

    def retune(self, retune_id: int) -> Retune:
        rows = self._read("chronos_retunes", "SELECT * FROM chronos_retunes WHERE retune_id=?", (retune_id,))
        if not rows:
            raise KeyError(retune_id)
        return Retune(*rows[0])

    def retunes(self, job_name: str | None = None) -> list[Retune]:
        query = "SELECT * FROM chronos_retunes" + (" WHERE job_name=?" if job_name else "") + " ORDER BY retune_id"
        return [Retune(*row) for row in self._read("chronos_retunes", query, (job_name,) if job_name else ())]

    def unfinished(self, job_name: str) -> Retune | None:
        """The newest retune of the job that did not reach a final step, if any."""
        pending = [r for r in self.retunes(job_name) if not r.finished]
        return pending[-1] if pending else None

    # -- decisions and live failures ---------------------------------------------------------------
    def record_decision(self, record: DecisionRecord) -> None:
        values = tuple(getattr(record, column) for column in DECISION_COLUMNS)
        with self._transaction() as db:
            db.execute(f"INSERT INTO chronos_decisions ({', '.join(DECISION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(values))})", values)

    def decisions(self, job_name: str, since_ms: int = 0, limit: int = 100_000) -> list[DecisionRecord]:
        """Oldest first."""
        rows = self._read("chronos_decisions",
                          f"SELECT {', '.join(DECISION_COLUMNS)} FROM chronos_decisions WHERE job_name=? AND at_ms>=? "
                          "ORDER BY at_ms DESC LIMIT ?", (job_name, since_ms, limit))
        fields = [dict(zip(DECISION_COLUMNS, row, strict=True)) for row in reversed(rows)]
        return [DecisionRecord(**{**f, "feasible": bool(f["feasible"])}) for f in fields]

    def prune_decisions(self, before_ms: int) -> int:
        """Fold the decisions older than `before_ms` into daily summaries (merged with any summary of the
        same day already there) and delete them; returns how many went."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO chronos_decision_days SELECT job_name, strftime('%Y-%m-%d', at_ms / 1000, 'unixepoch'), "
                "COUNT(*), SUM(action = 'retune'), SUM(feasible = 0), MIN(at_ms), MAX(at_ms), MIN(interval_s), "
                "MAX(interval_s), MAX(latency_violation_s), MAX(recovery_violation_s) FROM chronos_decisions "
                "WHERE at_ms < ? GROUP BY 1, 2 "
                "ON CONFLICT (job_name, day) DO UPDATE SET decisions = decisions + excluded.decisions, "
                "retunes = retunes + excluded.retunes, infeasible = infeasible + excluded.infeasible, "
                "first_ms = MIN(first_ms, excluded.first_ms), last_ms = MAX(last_ms, excluded.last_ms), "
                "min_interval_s = MIN(min_interval_s, excluded.min_interval_s), "
                "max_interval_s = MAX(max_interval_s, excluded.max_interval_s), "
                "latency_violation_s = MAX(latency_violation_s, excluded.latency_violation_s), "
                "recovery_violation_s = MAX(recovery_violation_s, excluded.recovery_violation_s)", (before_ms,))
            return int(db.execute("DELETE FROM chronos_decisions WHERE at_ms < ?", (before_ms,)).rowcount)

    def decision_days(self, job_name: str) -> list[tuple[str, int, int]]:
        """(day, decisions, retunes) of the summarized days, oldest first."""
        return [(str(d), int(n), int(r)) for d, n, r in self._read(
            "chronos_decision_days", "SELECT day, decisions, retunes FROM chronos_decision_days WHERE job_name=? "
            "ORDER BY day", (job_name,))]

    def job_names(self) -> list[str]:
        """Jobs with decisions or retunes on record."""
        rows = self._read("chronos_decisions", "SELECT job_name FROM chronos_decisions UNION SELECT job_name FROM "
                          "chronos_retunes ORDER BY 1")
        return [str(r[0]) for r in rows]

    def record_recovery(self, recovery: LiveRecovery) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO chronos_live_recoveries VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (recovery.job_name, recovery.failed_ms, recovery.interval_ms, recovery.rate, recovery.recovery_s,
                        recovery.running_ms, recovery.backlog_at_restart, recovery.catch_up_input_rate,
                        recovery.capacity, recovery.drain_rate,
                        json.dumps([list(kv) for kv in recovery.settings_in_force])))

    def recoveries(self, job_name: str) -> list[LiveRecovery]:
        where = f"the tune database {self.path}: chronos_live_recoveries.settings_in_force"
        return [LiveRecovery(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
                             stored_pairs(row[10], where))
                for row in self._read("chronos_live_recoveries", "SELECT * FROM chronos_live_recoveries WHERE "
                                      "job_name=? ORDER BY failed_ms", (job_name,))]

    def recovery_jobs(self) -> list[str]:
        return [str(r[0]) for r in self._read(
            "chronos_live_recoveries", "SELECT DISTINCT job_name FROM chronos_live_recoveries ORDER BY job_name")]

    def record_latency(self, latency: LiveLatency) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO chronos_live_latencies VALUES (?,?,?,?,?)",
                       (latency.job_name, latency.ended_ms, latency.interval_ms, latency.rate, latency.p99_ms))

    def latencies(self, job_name: str) -> list[LiveLatency]:
        return [LiveLatency(str(r[0]), int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in self._read(
            "chronos_live_latencies", "SELECT * FROM chronos_live_latencies WHERE job_name=? ORDER BY ended_ms",
            (job_name,))]

    # -- cadences of paced jobs ----------------------------------------------------------------------
    def open_cadence(self, job_name: str, job_id: str, from_ms: int | None, to_ms: int, fallback_ms: int,
                     now_ms: int, explanation: str) -> Cadence:
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO chronos_cadences (job_name, job_id, from_ms, to_ms, fallback_ms, decided_ms, explanation) "
                "VALUES (?,?,?,?,?,?,?)", (job_name, job_id, from_ms, to_ms, fallback_ms, now_ms, explanation))
            cadence_id = int(cursor.lastrowid or 0)
        return self._cadence(cadence_id)

    def cadence_in_force(self, cadence_id: int, now_ms: int) -> Cadence:
        with self._transaction() as db:
            db.execute("UPDATE chronos_cadences SET in_force_ms = COALESCE(in_force_ms, ?) WHERE cadence_id = ?",
                       (now_ms, cadence_id))
        return self._cadence(cadence_id)

    def cadences(self, job_name: str) -> list[Cadence]:
        return [Cadence(*row) for row in self._read(
            "chronos_cadences", "SELECT * FROM chronos_cadences WHERE job_name=? ORDER BY cadence_id", (job_name,))]

    def _cadence(self, cadence_id: int) -> Cadence:
        rows = self._read("chronos_cadences", "SELECT * FROM chronos_cadences WHERE cadence_id=?", (cadence_id,))
        if not rows:
            raise KeyError(cadence_id)
        return Cadence(*rows[0])
