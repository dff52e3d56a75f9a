"""Profiling clusters on this machine: one small Flink session cluster per profiling run, each a
stack of its own (own ports, directories, PIDs) that shares the live stack's Kafka broker.

A run's faults kill its own TaskManager only; a copy of the job on the live job's cluster could not be
broken without breaking the live job. Each cluster is a stack directory under the profile's, so
`chronos stack down --stack-dir` stops a leftover one like any other.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil

from chronos.errors import StackError
from chronos.stack.faults import KillTaskManager
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.processes import cpu_seconds
from chronos.stack.state import StackState, load_state

# Process sizes of a profiling cluster (JobManager 1 GiB + TaskManager 1.5 GiB, as `stack up` starts
# them) plus the copy's load generator and its share of the broker.
GIB_PER_CLUSTER = 3.0


def available_memory_gib() -> float:
    return float(psutil.virtual_memory().available) / 1024**3


def check_capacity(parallel: int, available_gib: float) -> None:
    """Refuse, in one line, more parallel clusters than the memory of this machine holds."""
    need = parallel * GIB_PER_CLUSTER
    if parallel < 1:
        raise StackError(f"--parallel must be at least 1, got {parallel}")
    if need > available_gib:
        most = int(available_gib // GIB_PER_CLUSTER)
        raise StackError(f"no room for {parallel} profiling clusters: they need ~{need:.0f} GiB, "
                         f"{available_gib:.1f} GiB is available (at most --parallel {most})")


@dataclass(frozen=True)
class LocalProfilingCluster:
    stack_dir: Path

    def _state(self) -> StackState:
        state = load_state(self.stack_dir)
        if state is None:
            raise StackError(f"profiling cluster {self.stack_dir} is gone")
        return state

    @property
    def rest_url(self) -> str:
        return self._state().rest_url

    @property
    def bootstrap(self) -> str:
        return self._state().bootstrap

    @property
    def reporter_urls(self) -> list[str]:
        return self._state().prometheus_urls

    def fault(self) -> KillTaskManager:
        return KillTaskManager(self.stack_dir)

    def taskmanager_cpu_seconds(self) -> float | None:
        """CPU seconds of the live TaskManagers (after a fault: the replacement's, from its start)."""
        readings = [cpu_seconds(record) for record in self._state().taskmanagers]
        known = [r for r in readings if r is not None]
        return sum(known) if known else None


class LocalClusterPool:
    """Starts a cluster per run under `base_dir`; one start at a time, so two runs starting together
    cannot pick the same free port."""

    def __init__(self, base_dir: Path, cache_dir: Path, shared_bootstrap: str, slots: int) -> None:
        self._base, self._cache, self._bootstrap, self._slots = base_dir, cache_dir, shared_bootstrap, slots
        self._lock = threading.Lock()

    def acquire(self, run_id: str) -> LocalProfilingCluster:
        stack_dir = self._base / run_id
        with self._lock:
            try:
                up(StackOptions(stack_dir, self._cache, slots=self._slots, shared_bootstrap=self._bootstrap))
            except BaseException:
                down(stack_dir, purge=True)
                shutil.rmtree(stack_dir, ignore_errors=True)
                raise
        return LocalProfilingCluster(stack_dir)

    def release(self, cluster: object) -> None:
        if isinstance(cluster, LocalProfilingCluster):
            down(cluster.stack_dir, purge=True)
            shutil.rmtree(cluster.stack_dir, ignore_errors=True)

    def leftovers(self) -> list[Path]:
        """Cluster directories of runs that were interrupted (their stacks may still be up)."""
        return sorted(p for p in self._base.glob("*") if (p / "stack.json").exists()) if self._base.exists() else []

    def clean_leftovers(self) -> list[Path]:
        found = self.leftovers()
        for stack_dir in found:
            down(stack_dir, purge=True)
            shutil.rmtree(stack_dir, ignore_errors=True)
        return found
