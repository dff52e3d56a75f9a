"""A bound on the profiling clusters a host runs at once, across profiles and so across jobs: fifty jobs' profiles
started together queue for a few clusters instead of starting fifty (each cluster is a JobManager and TaskManagers:
about a gigabyte and a core under load).

A lease is an exclusive `flock` on one of N files in the stack's profiling directory, held while the cluster lives.
flock rather than a count in a file: the kernel releases the lock of a process that dies, however it dies, so a
killed profile never keeps a lease (no stale count to repair), and it works across every `chronos profile run` of
the stack, whichever process or thread asks. Hand-written: the standard library's fcntl is all it needs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chronos.errors import ChronosError

POLL_S = 1.0


class LeaseWaitInterrupted(ChronosError):
    """A stop came while a run waited for a profiling cluster: it never started one."""


@dataclass
class Lease:
    index: int
    _fd: int

    def release(self) -> None:
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = -1


class ClusterLeases:
    def __init__(self, directory: Path, at_once: int, sleep: Callable[[float], None] = time.sleep) -> None:
        if at_once < 1:
            raise ValueError("at least one profiling cluster at a time")
        self.directory, self.at_once, self._sleep = directory, at_once, sleep

    def try_acquire(self, who: str) -> Lease | None:
        """A free lease, or None when all `at_once` are held (by any process of this host)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for index in range(self.at_once):
            fd = os.open(self.directory / f"lease-{index}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{who} pid {os.getpid()}\n".encode())
            return Lease(index, fd)
        return None

    def acquire(self, who: str, waiting: Callable[[str], None] = lambda _: None,
                interrupted: Callable[[], bool] = lambda: False) -> Lease:
        """A lease, waiting (said once) while all are held; a stop while waiting raises LeaseWaitInterrupted."""
        said = False
        while True:
            lease = self.try_acquire(who)
            if lease is not None:
                return lease
            if interrupted():
                raise LeaseWaitInterrupted(f"{who} never started: stopped while it waited for a profiling cluster")
            if not said:
                waiting(f"{who} waits for a profiling cluster: the {self.at_once} this host runs at once are in use "
                        f"({'; '.join(self.holders()) or 'by other profiles'})")
                said = True
            self._sleep(POLL_S)

    def holders(self) -> list[str]:
        """Who holds the leases now, as they wrote it (a lease file's words outlive its lock: only held ones)."""
        held = []
        for index in range(self.at_once):
            path = self.directory / f"lease-{index}"
            if not path.exists():
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    held.append(path.read_text(errors="replace").strip()[:100])
                else:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        return held
