"""`chronos profile run --parallel auto`: as many copies at a time as the host's idle CPU holds beside the live job,
at least one, at most what was asked (a fixed two beside a busy live job on two cores took what it
needed)."""

from __future__ import annotations

import time
from pathlib import Path

from chronos.profiler.headroom import COPY_OVERHEAD_CORES, HostLoad, copies_for
from chronos.stack.host_load import HostMeter


def test_an_idle_host_runs_as_many_as_asked() -> None:
    choice = copies_for(HostLoad(cores=8, busy_cores=1.0, live_job_cores=0.5, window_s=30), most=2)
    assert choice.parallel == 2 and "(at most 2)" in choice.why


def test_a_busy_live_job_on_two_cores_leaves_room_for_one_copy_at_a_time() -> None:
    choice = copies_for(HostLoad(cores=2, busy_cores=1.7, live_job_cores=1.2, window_s=30), most=2)
    assert choice.parallel == 1
    assert "0.3 of 2 cores idle" in choice.why and f"~{1.2 + COPY_OVERHEAD_CORES:.1f}" in choice.why
    assert "one at a time, at a lower OS priority" in choice.why


def test_the_copies_fit_the_idle_cores_at_the_live_job_s_size() -> None:
    assert copies_for(HostLoad(cores=4, busy_cores=0.6, live_job_cores=0.3, window_s=30), most=4).parallel == 3
    unmeasured = copies_for(HostLoad(cores=4, busy_cores=0.3, live_job_cores=None, window_s=30), most=4)
    assert unmeasured.parallel == 2 and "1 core assumed" in unmeasured.why


def test_a_light_live_job_on_two_cores_still_gets_one_copy_at_a_time() -> None:
    """Measured on a two-core host: 1.1-1.3 of 2 cores idle beside the shipped jobs, whose TaskManagers used 0.1-0.2; two
    copies at a time then read each other's starts and kills as p99 (12-33 s at 2-3 s intervals, 3.5-7.9 s alone)."""
    assert copies_for(HostLoad(cores=2, busy_cores=0.7, live_job_cores=0.2, window_s=32), most=2).parallel == 1


def test_the_meter_reads_this_host_s_cpu_over_its_window(tmp_path: Path) -> None:
    meter = HostMeter(tmp_path)  # no stack there: the live job's share is not known
    meter.start()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep one core busy
        pass
    load = meter.read()
    assert load.live_job_cores is None and load.window_s >= 0.3
    assert 0.5 <= load.busy_cores <= load.cores + 0.1, load
