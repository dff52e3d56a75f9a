"""The host's bound on profiling clusters: N leases across every process and thread, a run beyond them waits (said
once, naming who holds them) until one is released, a stop ends the wait, and a holder that dies frees its lease."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chronos.stack.cluster_leases import ClusterLeases, LeaseWaitInterrupted


def test_at_most_n_leases_are_held_and_a_released_one_is_taken_by_the_next(tmp_path: Path) -> None:
    leases = ClusterLeases(tmp_path, at_once=2)
    first, second = leases.try_acquire("run a"), leases.try_acquire("run b")
    assert first is not None and second is not None and {first.index, second.index} == {0, 1}
    assert leases.try_acquire("run c") is None
    assert sorted(leases.holders()) == [f"run a pid {_pid()}", f"run b pid {_pid()}"]
    said: list[str] = []
    got = []
    waiter = threading.Thread(target=lambda: got.append(leases.acquire("run c", said.append)))
    waiter.start()
    time.sleep(0.3)
    assert not got and len(said) == 1
    assert said[0].startswith("run c waits for a profiling cluster: the 2 this host runs at once are in use (run a")
    first.release()
    waiter.join(5)
    assert got and got[0].index == first.index and len(said) == 1, "said once, however long it waited"
    second.release()
    got[0].release()


def test_a_stop_ends_the_wait_without_a_lease(tmp_path: Path) -> None:
    leases = ClusterLeases(tmp_path, at_once=1)
    held = leases.try_acquire("run a")
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    with pytest.raises(LeaseWaitInterrupted, match="run b never started: stopped while it waited"):
        leases.acquire("run b", interrupted=stop.is_set)
    assert held is not None
    held.release()


def test_a_holder_that_dies_frees_its_lease(tmp_path: Path) -> None:
    code = (f"from pathlib import Path; from chronos.stack.cluster_leases import ClusterLeases; "
            f"lease = ClusterLeases(Path({str(tmp_path)!r}), 1).try_acquire('run x'); print(lease is not None, "
            "flush=True); import time; time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        leases = ClusterLeases(tmp_path, at_once=1)
        assert leases.try_acquire("run y") is None and leases.holders() == [f"run x pid {holder.pid}"]
        holder.kill()
        holder.wait(10)
        lease = leases.try_acquire("run y")
        assert lease is not None, "the kernel freed the dead holder's lock"
        lease.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def _pid() -> int:
    import os

    return os.getpid()
