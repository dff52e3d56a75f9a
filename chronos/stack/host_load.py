"""What this host's CPU is doing over a window: in use host-wide, and by the live stack's TaskManagers and their
Python UDF workers (chronos.profiler.headroom turns it into how many profiling copies fit beside the live job).
psutil's counters, read at the window's two ends: no sampling thread."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil

from chronos.profiler.headroom import HostLoad
from chronos.stack.flink_cluster import python_workers_of
from chronos.stack.processes import cpu_seconds
from chronos.stack.state import load_state


def _busy_seconds() -> float:
    """Host-wide CPU seconds not idle (Linux counts guest time within user time: not added twice)."""
    fields = psutil.cpu_times()._asdict()
    total = sum(v for k, v in fields.items() if k not in ("guest", "guest_nice"))
    return float(total - fields["idle"] - fields.get("iowait", 0.0))


class HostMeter:
    def __init__(self, stack_dir: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._stack_dir, self._clock = stack_dir, clock
        self._start: tuple[float, float, dict[int, float]] | None = None

    def _live_job(self) -> dict[int, float]:
        """CPU seconds per process of the live stack's TaskManagers and their Python workers, by PID."""
        state = load_state(self._stack_dir)
        if state is None:
            return {}
        found = {}
        for tm in state.taskmanagers:
            for record in (tm, *python_workers_of(tm)):
                seconds = cpu_seconds(record)
                if seconds is not None:
                    found[record.pid] = seconds
        return found

    def start(self) -> None:
        self._start = (self._clock(), _busy_seconds(), self._live_job())

    @property
    def elapsed_s(self) -> float:
        return 0.0 if self._start is None else self._clock() - self._start[0]

    def read(self) -> HostLoad:
        if self._start is None:
            raise RuntimeError("HostMeter.read() before start()")
        at, busy, live = self._start
        window = max(self._clock() - at, 1e-6)
        now = self._live_job()
        # A process that started within the window (a replacement TaskManager, a new Python worker) counts from 0.
        live_cores = sum(seconds - live.get(pid, 0.0) for pid, seconds in now.items()) / window if now else None
        return HostLoad(psutil.cpu_count() or 1, (_busy_seconds() - busy) / window, live_cores, window)
