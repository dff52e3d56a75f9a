"""The SQLite files (tune journal, profile store) are opened by several processes at once: a tuner and a
`chronos job retune`, a test and the command it runs. Two that open a new file together must both end up
with the same schema, neither failing because the other created it first (seen in CI:
"table chronos_tune_meta already exists")."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.profiler.store import ProfileStore
from chronos.sqlite_schema import VersionedDatabase
from chronos.tune.journal import MIGRATIONS, TuneJournal


class OpenedBeforeTheOther(VersionedDatabase):
    """Reads the version as a process does that looked just before another one migrated the file."""

    stale_reads = 1

    @property
    def version(self) -> int:
        if self.stale_reads:
            self.stale_reads -= 1
            return 0
        return super().version


def test_a_file_migrated_by_another_process_since_it_was_looked_at_is_not_migrated_again(tmp_path: Path) -> None:
    path = tmp_path / "chronos.db"
    TuneJournal(path).close()  # the other process, first to the lock
    late = OpenedBeforeTheOther(path, "chronos_tune_meta", MIGRATIONS, "tune")
    assert late.version == len(MIGRATIONS)
    late.close()


def test_many_opening_a_new_file_at_once_all_get_the_whole_schema(tmp_path: Path) -> None:
    path = tmp_path / "chronos.db"
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def open_it() -> None:
        start.wait()
        try:
            VersionedDatabase(path, "chronos_tune_meta", MIGRATIONS, "tune").close()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    journal = TuneJournal(path)
    assert journal.retunes() == []
    journal.close()


# -- a file that is not chronos's is refused untouched ----------------------------------------------------------
def _fingerprint(path: Path) -> tuple[bytes, float]:
    return path.read_bytes(), path.stat().st_mtime


def test_another_program_s_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE users (name TEXT)")
    before = _fingerprint(path)
    for opener in (TuneJournal, ProfileStore):
        with pytest.raises(InvalidInput, match="another program's database \\(tables 'users'\\)"):
            opener(path)
    assert _fingerprint(path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_device_is_refused_and_nothing_is_left_beside_it() -> None:
    with pytest.raises(InvalidInput, match="/dev/null is not a regular file"):
        TuneJournal(Path("/dev/null"))
    assert not Path("/dev/null-journal").exists()


def test_a_schema_version_no_chronos_writes_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "chronos.db"
    TuneJournal(path).close()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE chronos_tune_meta SET value = 'abc' WHERE key = 'schema_version'")
    with pytest.raises(InvalidInput, match="schema version 'abc', which no chronos writes"):
        TuneJournal(path)


def test_a_database_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "chronos.db"
    TuneJournal(path).close()
    path.chmod(0o666)
    with pytest.raises(InvalidInput, match="writable by other users"):
        TuneJournal(path)


def test_chronos_s_own_database_opens_with_what_it_shares_the_file_with(tmp_path: Path) -> None:
    path = tmp_path / "profiles.db"
    ProfileStore(path).close()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE studies (study_id INTEGER)")  # a profile's Optuna study, in the same file
    TuneJournal(path).close()  # the journal's tables beside the profile store's: all of it chronos's
    ProfileStore(path).close()
