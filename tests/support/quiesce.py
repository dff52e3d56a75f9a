"""Leave the shared stack idle between tests: no job left in any state but a terminal one, every slot free.

Why slots too: a job reads CANCELED once its tasks reported their end, but the TaskManager may still be
closing an exactly-once Kafka writer then. If the next test breaks Kafka at that moment, the close blocks and
Flink kills the whole TaskManager (seen twice in CI; every later test on that worker then found no slots).
A slot is given back only after its tasks are gone, we thought; yet CI once more saw a Kafka restart kill a
TaskManager right after "no job running, every slot free" (a job's exactly-once writer, restored seconds before,
was still on it; this helper then gave up silently on any failed reply). So it asks again until its deadline, and
the last word is the TaskManagers' own thread dumps: no task thread, none of a task's helpers and no Kafka client
thread left on any of them.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable

import httpx

from chronos.flink.rest import FlinkRestClient

TERMINAL = frozenset({"FINISHED", "CANCELED", "FAILED"})
# A task's thread and its helpers carry the task's "(subtask/parallelism)#attempt"; Kafka clients name theirs kafka-*.
_JOB_THREAD = re.compile(r"\(\d+/\d+\)#\d+|^kafka-")


def job_threads(flink: FlinkRestClient) -> list[str]:
    """The threads of any job still alive on the cluster's TaskManagers (Flink's REST thread dump)."""
    found = []
    for tm in flink.taskmanagers():
        reply = httpx.get(f"{flink.base_url}/taskmanagers/{tm.id}/thread-dump", timeout=10).json()
        found += [t["threadName"] for t in reply["threadInfos"] if _JOB_THREAD.search(t["threadName"])]
    return found


def quiesce(flink: FlinkRestClient, which: Callable[[str, str], bool] = lambda _jid, _name: True,
            timeout_s: float = 90.0) -> None:
    """Cancel every job not yet terminal that `which(job id, name)` picks (all by default), wait until each is
    terminal and, if no other job runs, until every slot is free and no job's thread is left on a TaskManager.
    A reply that fails is asked again until the deadline (a job list once lost to a slow reply left a restarting job
    behind, we think); past it, a cluster that does not answer is the test's to report."""
    deadline = time.monotonic() + timeout_s
    cancelled: set[str] = set()
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            live = [job for job in flink.jobs() if job.state not in TERMINAL]
            picked = [job.jid for job in live if which(job.jid, job.name)]
            for jid in picked:
                if jid not in cancelled:
                    flink.cancel(jid)
                    cancelled.add(jid)
            if not picked:
                if live:
                    return  # a job this call did not pick holds slots on purpose
                overview = flink.overview()
                if overview.slots_available >= overview.slots_total and not job_threads(flink):
                    return
        time.sleep(0.2)
