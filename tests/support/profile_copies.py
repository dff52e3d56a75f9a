"""What a real profile leaves behind, and where its copies run: the checks the profile tests share."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

import psutil

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.stack.profiling_clusters import COPY_NICENESS
from chronos.stack.state import StackState, load_state
from tests.support.processes import leftovers


class ClusterWatch:
    """Every profiling cluster directory the profile creates, seen by a thread polling its base: so the
    check for survivors looks at this profile's clusters only (another stack may be up beside it)."""

    def __init__(self, sd: Path) -> None:
        self.base = sd / "profiling"
        self.seen: set[Path] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            found = {p.parent for p in self.base.glob("*/*/stack.json")}
            with self._lock:
                self.seen |= found

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def survivors(self) -> list[str]:
        with self._lock:
            seen = sorted(self.seen)
        return [line for d in seen for line in leftovers(d)]


def profile_topics(bootstrap: str, security: KafkaSecurity = PLAINTEXT) -> list[str]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **security.kafka_python_settings())
    try:
        return [t for t in admin.list_topics() if "-profile-" in t]
    finally:
        admin.close()


def copies_on_record(sd: Path) -> int:
    return len(list((sd / "profiling").glob("*/*/stack.json")))


def assert_nothing_left(stack: StackState, clusters: ClusterWatch) -> None:
    """No cluster the profile started still runs or is on record, and none of its copies' topics is on the broker."""
    assert clusters.seen, "no profiling cluster was seen"
    assert not clusters.survivors(), f"a profiling cluster survived: {clusters.survivors()}"
    assert copies_on_record(Path(stack.stack_dir)) == 0, "a profiling stack is still on record"
    assert profile_topics(stack.bootstrap) == [], "a profiling topic was left on the broker"


def assert_copies_run_below_the_live_job(sd: Path) -> None:
    """A copy's Flink processes run at COPY_NICENESS, the live stack's at 0: on a shared host the copies take the
    CPU the live job leaves."""
    copy, live = next(load_state(p.parent) for p in (sd / "profiling").glob("*/*/stack.json")), load_state(sd)
    assert copy is not None and live is not None and copy.niceness == COPY_NICENESS and live.niceness == 0
    for state, niceness in ((copy, COPY_NICENESS), (live, 0)):
        for record in (state.jobmanager, *state.taskmanagers):
            with contextlib.suppress(psutil.NoSuchProcess):  # a fault may have just killed and replaced it
                assert psutil.Process(record.pid).nice() == niceness, record


def trials_under_way(db: Path) -> int:
    """Trials asked of the profile's study and not yet told: the ones a resumed profile queues again."""
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'").fetchone()[0])
