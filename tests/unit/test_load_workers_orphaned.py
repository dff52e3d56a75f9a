"""A load's worker processes end when the process that started them is killed outright (SIGKILL: no clean-up of
its own runs), so a killed `chronos profile run` or `chronos load` leaves nothing producing."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

PARENT = textwrap.dedent("""
    import sys, time
    from chronos.jobs.parallel_load import run_worker_processes
    from chronos.rates import ConstantRate
    from tests.unit.test_load_workers_orphaned import forever
    run_worker_processes(forever, sys.argv[1], 2, ConstantRate(1.0))
""")


def forever(pid_dir: str, index: int, sent: object, stop: object) -> None:
    """A worker body that produces until told to stop, its pid left in `pid_dir`."""
    Path(pid_dir, f"{index}.pid").write_text(str(os.getpid()))
    while not stop.is_set():  # type: ignore[attr-defined]
        time.sleep(0.1)


def test_workers_stop_when_their_parent_is_killed(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
        assert len(workers) == 2, "the workers started"
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in workers if psutil.pid_exists(pid)], timeout=10)
        assert not alive, f"workers still running after their parent was killed: {[p.pid for p in alive]}"
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid_file in tmp_path.glob("*.pid"):  # a failing run leaves nothing behind either
            with contextlib.suppress(psutil.Error, ValueError):
                psutil.Process(int(pid_file.read_text())).kill()
