"""A SQLite file shared by parts that each own some tables: one connection per owner, each owner's
schema versioned in its own meta table and migrated forward on open, one script per version.

A file written by a newer chronos is refused in one line rather than guessed at; a file that is not
a database at all is refused the same way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from chronos.errors import InvalidInput


class VersionedDatabase:
    def __init__(self, path: Path, meta_table: str, migrations: Sequence[str], what: str,
                 foreign_keys: bool = False) -> None:
        self.path = path
        self._meta = meta_table
        self._what = what
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"cannot create the directory of {path}: {exc.strerror or exc}") from exc
        self.lock = threading.RLock()
        try:
            # Used from worker threads too (profiling runs, the tuner's observer); every use holds `lock`.
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            if foreign_keys:
                self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate(migrations)
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{path} is not a chronos {what} database ({exc})") from exc

    @property
    def version(self) -> int:
        exists = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (self._meta,)).fetchone()
        if not exists:
            return 0
        row = self.db.execute(f"SELECT value FROM {self._meta} WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self, migrations: Sequence[str]) -> None:
        self._readable(self.version, migrations)
        for number in range(len(migrations)):
            with self.transaction() as db:
                # Read again under the write lock: another process opening the same new file (a tuner and a
                # `job retune`, a test and the command it runs) may have applied this step since.
                version = self._readable(self.version, migrations)
                if version > number:
                    continue
                for statement in migrations[number].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"INSERT OR REPLACE INTO {self._meta} VALUES ('schema_version', ?)", (str(number + 1),))

    def _readable(self, version: int, migrations: Sequence[str]) -> int:
        if version > len(migrations):
            raise InvalidInput(f"{self.path} has {self._what} schema v{version}; this chronos reads up to "
                               f"v{len(migrations)}")
        return version

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()
