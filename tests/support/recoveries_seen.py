"""What a profile's recoveries looked like, for an assertion's message: when too few were measured, the phases
say whether the job was slow to run again (a TaskManager's start) or to catch up (bands, CPU)."""

from __future__ import annotations

from collections.abc import Iterable

from chronos.model import RecoveryMeasurement
from chronos.profiler.records import ProfileRun


def recoveries_seen(runs: Iterable[ProfileRun]) -> list[str]:
    def line(m: RecoveryMeasurement) -> str:
        def since(ms: int | None) -> str:
            return "-" if ms is None else f"{(ms - m.fault.injected_wall_ms) / 1000:.1f}s"

        return (f"at {m.interval_ms / 1000:g}s: recovery {m.recovery_s}, detected {since(m.detected_ms)} running "
                f"{since(m.running_ms)} recovered {since(m.recovered_ms)}, peak lag {m.peak_lag}, backlog "
                f"{m.backlog_at_restart}, capacity {m.capacity}, drain {m.drain_rate}")

    return [line(m) for run in runs for m in run.recoveries]
