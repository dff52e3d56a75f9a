"""The SQLite files (tune journal, profile store) are opened by several processes at once: a tuner and a
`chronos job retune`, a test and the command it runs. Two that open a new file together must both end up
with the same schema, neither failing because the other created it first (seen in CI:
"table chronos_tune_meta already exists")."""

from __future__ import annotations

import threading
from pathlib import Path

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
