"""A SQLite file shared by parts that each own some tables: one connection per owner, each owner's
schema versioned in its own meta table and migrated forward on open, one script per version.

A file written by a newer chronos is refused in one line rather than guessed at; a file that is not
a database at all is refused the same way. So is, untouched, a file that is not chronos's: a device
(`--db /dev/null` left a world-writable `/dev/null-journal` behind), another program's SQLite database (it
got seven `chronos_*` tables added), or one another user owns or could write (the journal says which
program chronos resubmits from which savepoint).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from chronos.errors import InvalidInput
from chronos.input_files import require_private

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
