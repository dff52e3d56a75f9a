"""Leave the shared stack idle between tests: no job left in any state but a terminal one, every slot free.

Why slots too: a job reads CANCELED once its tasks reported their end, but the TaskManager may still be
closing an exactly-once Kafka writer then. If the next test breaks Kafka at that moment, the close blocks and
Flink kills the whole TaskManager (seen twice in CI; every later test on that worker then found no slots).
A slot is given back only after its tasks are gone, so all slots free means nothing of a job is left.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from chronos.flink.rest import FlinkRestClient

TERMINAL = frozenset({"FINISHED", "CANCELED", "FAILED"})


def quiesce(flink: FlinkRestClient, which: Callable[[str, str], bool] = lambda _jid, _name: True,
            timeout_s: float = 90.0) -> None:
    """Cancel every job not yet terminal that `which(job id, name)` picks (all by default), wait until each is
    terminal and, if no other job runs, until every slot is free again. Best effort: a dead cluster is the
    test's to report."""
    deadline = time.monotonic() + timeout_s
    with contextlib.suppress(Exception):
        cancelled = [job.jid for job in flink.jobs() if job.state not in TERMINAL and which(job.jid, job.name)]
        for jid in cancelled:
            with contextlib.suppress(Exception):
                flink.cancel(jid)
        for jid in cancelled:
            left = max(1.0, deadline - time.monotonic())
            with contextlib.suppress(Exception):
                flink.wait_for_state(jid, lambda d: d.state in TERMINAL, left, "cancelled")
        if any(job.state not in TERMINAL for job in flink.jobs()):
            return  # a job this call did not pick holds slots on purpose
        while time.monotonic() < deadline:
            overview = flink.overview()
            if overview.slots_available >= overview.slots_total:
                return
            time.sleep(0.5)
