"""A profile written rather than measured: a job's recoveries as detection and restart (a fixed part) plus the
replay of an interval's input at a drain rate, on a grid of intervals and rates. The tuning tests and the many-job
bench tune real jobs against it when what they look at is the tuner, not the models: it makes a load step bind the
recovery target at a few hundred events/s, which a profile of the job itself would take ten minutes to measure."""

from __future__ import annotations

from pathlib import Path

from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.store import ProfileStore

DRAIN_RATE = 250.0
PROFILED_RATES = (DRAIN_RATE / 2, DRAIN_RATE * 1.5, DRAIN_RATE * 3)
FIXED_S = 20.0


def profile_recovery(interval_s: float, rate: float, fixed_s: float = FIXED_S, drain_rate: float = DRAIN_RATE) -> float:
    """The recovery the synthetic profile measured: `fixed_s` and the replay of an interval's input at `drain_rate`."""
    return fixed_s + interval_s * rate / drain_rate


def write_profile(db: Path, job_name: str, profile_id: str = "synthetic") -> None:
    """Two recoveries (3 % either side of the truth) at each of six intervals and three rates."""
    store = ProfileStore(db)
    try:
        store.create_profile(profile_id, job_name, 0, "{}")
        n = 0
        for interval in (2, 4, 8, 15, 30, 60):
            for rate in PROFILED_RATES:
                n += 1
                recoveries = tuple(
                    RecoveryMeasurement(FaultRecord("kill-taskmanager", "tm", 0, 0.0), interval * 1000, "WorstCase", 1,
                                        2, 3, profile_recovery(interval, rate) * (1 + noise), None, None, None, None)
                    for noise in (-0.03, 0.03))
                steady = SteadyState(rate, None, None, 1000.0 * interval + 2000, 100.0, 1e5, 10.0)
                store.save_run(ProfileRun(f"{profile_id}-r{n}", profile_id, n, RunConfig(interval * 1000, 1.0), rate,
                                          "completed", 0, 1, steady, recoveries))
    finally:
        store.close()
