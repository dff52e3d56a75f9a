"""A profiling copy runs below the live job's OS priority: its Flink daemons are started through `nice`, and its
load's producer processes lower their own priority before producing (copies beside the live job on two
cores raised its p99 by 12 %). The real clusters' priorities are checked in tests/integration/test_any_job.py."""

from __future__ import annotations

import os
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event

import pytest

from chronos.errors import StackError
from chronos.jobs.loadgen import LoadReport
from chronos.jobs.parallel_load import run_worker_processes
from chronos.rates import ConstantRate
from chronos.stack.flink_cluster import niced
from chronos.stack.profiling_clusters import COPY_NICENESS


def test_a_script_is_started_through_nice_only_when_asked_to_run_lower() -> None:
    assert niced(0) == []
    assert niced(COPY_NICENESS) == ["nice", "-n", str(COPY_NICENESS)]
    with pytest.raises(StackError, match="niceness must be 0 to 19"):
        niced(20)


def report_niceness(plan: object, index: int, sent: Synchronized, stop: Event) -> LoadReport:  # type: ignore[type-arg]
    return LoadReport(os.nice(0), 0.0, 0.0, ())


def test_a_copy_s_load_workers_run_at_its_lower_priority() -> None:
    mine = os.nice(0)
    (lowered,) = run_worker_processes(report_niceness, None, 1, ConstantRate(1), niceness=5)
    (unchanged,) = run_worker_processes(report_niceness, None, 1, ConstantRate(1))
    assert (lowered.sent, unchanged.sent) == (min(mine + 5, 19), mine)
