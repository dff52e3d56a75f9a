"""How many profiling copies may run at a time beside the live job, from what the host has left.

A fixed two copies on a two-core host beside a busy live job took cores the live job needed (its p99 +12 %);
the bench then ran one at a time by hand. A copy at the live job's rate needs what the live job's TaskManagers
take and more (COPY_OVERHEAD_CORES): at its shortest intervals a copy's TaskManager took 0.4-0.5 cores where the live
job's took 0.1-0.2 at 1,000-2,000 events/s, and its JobManager, its input producer and, at each kill, a replacement
TaskManager's start come on top. With an allowance of 0.3 two copies ran beside the live job on two cores (1.1-1.3
idle) and disturbed each other, not the live job: their p99 at 2-3 s intervals read 12-33 s where one copy at a time
read 3.5-7.9 s, and the demo's p99 model was 64-81 % off held out against 18 % one at a time
(bench/results/profile_trust). So: the host's idle cores over a window before the first copy, divided by
that need, at least one (a profile with no copy measures nothing; the copies run at a lower OS priority and the live
watch holds them back if the live job leaves its band) and at most what was asked. Pure: values in, out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COPY_OVERHEAD_CORES = 0.8
AUTO_MOST = 2  # `--parallel auto` never starts more at a time than this: more copies would each get less


@dataclass(frozen=True)
class HostLoad:
    cores: int
    busy_cores: float  # in use host-wide over the window (the live job, its load, anything else)
    live_job_cores: float | None  # the live job's TaskManagers and their Python workers; None: not measured
    window_s: float


@dataclass(frozen=True)
class CopiesChoice:
    parallel: int
    why: str


def copies_for(load: HostLoad, most: int) -> CopiesChoice:
    idle = max(0.0, load.cores - load.busy_cores)
    live = load.live_job_cores
    per_copy = (live if live is not None else 1.0) + COPY_OVERHEAD_CORES
    fits = math.floor(idle / per_copy + 1e-9)
    parallel = max(1, min(most, fits))
    said_live = "not measured, 1 core assumed" if live is None else f"{live:.1f}"
    why = (f"{idle:.1f} of {load.cores} cores idle over {load.window_s:.0f} s; a copy needs ~{per_copy:.1f} (the live "
           f"job's TaskManagers use {said_live}, plus {COPY_OVERHEAD_CORES:g} for its checkpoints, JobManager, input and "
           "restarts): ")
    if fits < 1:
        return CopiesChoice(1, why + "one at a time, at a lower OS priority than the live job")
    return CopiesChoice(parallel, why + f"{parallel} at a time" + (f" (at most {most})" if fits > most else ""))
