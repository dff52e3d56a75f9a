"""A SQLite file shared by parts that each own some tables: one connection per owner, each owner's
schema versioned in its own meta table and migrated forward on open, one script per version.

A file written by a newer chronos is refused in one line rather than guessed at; a file that is not
a database at all is refused the same way. So is, untouched, a file that is not chronos's: a device
(`--db /dev/null` left a world-writable `/dev/null-journal` behind), another program's SQLite database (it
got seven `chronos_*` tables added), or one another user owns or could write (the journal says which
program chronos resubmits from which savepoint).
"""

from __future__ import annotations

import math
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from chronos.errors import InvalidInput
from chronos.input_files import load_json, require_private

SQLITE_HEADER = b"SQLite format 3\x00"


def refuse_foreign(path: Path, what: str) -> None:
    """Raise InvalidInput, touching nothing, unless `path` is absent, empty, or a SQLite file of chronos's user
    that chronos made: no tables yet, or chronos's own (`chronos_*`) among them (a profile's Optuna study keeps
    its tables beside them, in the same file)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # a new database (or a folder that cannot be: said at mkdir)
        if path.is_symlink():
            raise InvalidInput(f"{path} is a dangling symlink, not a chronos {what} database") from None
        return
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"{path} is not a regular file; chronos keeps its {what} database in a file of its own")
    require_private(path, f"the {what} database")
    if info.st_size == 0:
        return
    with open(path, "rb") as handle:
        if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise InvalidInput(f"{path} is not a chronos {what} database (not SQLite at all); give a file of chronos's own "
                               "(or a new path)")
    try:
        with closing(sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=30)) as db:
            names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{path} is not a chronos {what} database ({exc})") from None
    foreign = sorted(n for n in names if not (n.startswith("chronos_") or n.startswith("sqlite_")))
    if foreign and not any(n.startswith("chronos_") for n in names):
        shown = ", ".join(repr(n[:40]) for n in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise InvalidInput(f"{path} is another program's database (tables {shown}); chronos writes only into a "
                           "database of its own: give another path")


class VersionedDatabase:
    def __init__(self, path: Path, meta_table: str, migrations: Sequence[str], what: str,
                 foreign_keys: bool = False) -> None:
        self.path = path
        self._meta = meta_table
        self._what = what
        refuse_foreign(path, what)
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
        if row is None:
            return 0
        if not str(row[0]).isascii() or not str(row[0]).isdigit() or len(str(row[0])) > 6:
            raise InvalidInput(f"{self.path} has {self._what} schema version {str(row[0])[:20]!r}, which no chronos "
                               "writes; not a chronos database")
        return int(row[0])

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

    def read(self, table: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows `sql` selects from `table`, every value checked against its column as chronos declared it (the
        type, NOT NULL, and the bounds of `_checked`), so a file edited or damaged by hand is refused in one line
        naming the column, not found later as a TypeError, an OverflowError or an infinity in a model fit; a missing
        table or a damaged file is one line too."""
        with self.lock:
            try:
                columns = self._columns(table)
                cursor = self.db.execute(sql, tuple(params))
                names = [d[0] for d in cursor.description or ()]
                rows = cursor.fetchall()
            except sqlite3.Error as exc:
                raise InvalidInput(f"the {self._what} database {self.path} does not read ({exc}); chronos did not "
                                   "write it so, or it is damaged") from None
        for row in rows:
            for name, value in zip(names, row, strict=True):
                declared = columns.get(name)
                if declared is not None and not _checked(name, value, *declared):
                    raise InvalidInput(f"the {self._what} database {self.path} holds {_shown(value)} in {table}.{name}, "
                                       "a value chronos never writes there; it was changed by hand, or is damaged")
        return rows

    def _columns(self, table: str) -> dict[str, tuple[str, bool]]:
        """Each column's declared type and whether it may be NULL (PRAGMA table_info; SQLite keeps no other)."""
        found = {str(r[1]): (str(r[2]).upper(), not r[3]) for r in self.db.execute(f"PRAGMA table_info({table})")}
        if not found:
            raise sqlite3.OperationalError(f"no such table: {table}")
        return found


# What a column of chronos's holds: an INTEGER no larger than a float counts exactly (JSON, numpy), and a time or
# duration in milliseconds within the years a datetime reaches; a REAL finite and of sensible size (a model fit
# squares it); TEXT text, a BLOB bytes.
_MAX_INT = 2**53
_MAX_MS = 253_402_300_799_999  # 9999-12-31: past it, no date can be written
_MAX_REAL = 1e15


def _checked(name: str, value: Any, declared: str, nullable: bool) -> bool:
    if value is None:
        return nullable
    if declared == "INTEGER":
        return (isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_INT
                and (not name.endswith("_ms") or abs(value) <= _MAX_MS))
    if declared == "REAL":
        return isinstance(value, int | float) and math.isfinite(value) and abs(value) <= _MAX_REAL
    if declared == "TEXT":
        return isinstance(value, str)
    if declared == "BLOB":
        return isinstance(value, bytes)
    return True


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def stored_pairs(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """Settings stored as a JSON list of [key, value] pairs (as chronos writes them), or one line naming `where`."""
    pairs = load_json(text, where)
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                              for p in pairs):
        raise InvalidInput(f"{where} is not a list of [key, value] pairs, as chronos writes it")
    return tuple((k, v) for k, v in pairs)
