"""The interval to run before any model exists: from what the live job alone shows.

Young's optimum sqrt(2 C M) from the measured checkpoint cost C and the MTBF M (the failures seen, else a
default the user can set), then bounded from above by both targets, each by a first-order model that needs
no profile:
- latency: an exactly-once sink makes its output visible when the checkpoint after it completes, so a
  record's end-to-end latency is up to an interval plus the checkpoint's duration (plus the job's own
  processing, read off the observed p99 where there is one): interval <= target - (the larger of both);
- recovery: a failure costs a fixed part (detection, rescheduling, restore: the median recovery seen, from
  live failures or an `--allow-fault` probe, else a default) plus the replay of up to one interval of input,
  caught up at the job's spare capacity (`headroom`: capacity / input rate - 1):
  interval <= (target - fixed) x headroom.
Refined as failures arrive (they give M and the fixed part); replaced by the fitted models once there are any.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Literal

from chronos.optimizer.baselines import young_interval_s


@dataclass(frozen=True)
class ColdStartInputs:
    checkpoint_cost_s: float | None
    mtbf_s: float | None  # from failures seen, or the policy's; None: use the default
    default_mtbf_s: float
    recoveries_s: tuple[float, ...]  # recoveries seen on the live job (failures, a probe)
    default_fixed_recovery_s: float
    headroom: float  # spare capacity as a share of the input rate
    observed_p99_ms: float | None
    current_interval_s: float
    latency_target_ms: float | None  # None: no latency target
    recovery_target_s: float
    safety_margin: float
    interval_min_s: float
    interval_max_s: float


@dataclass(frozen=True)
class ColdStartChoice:
    wanted_s: float | None  # None: nothing to go on yet
    binding: Literal["latency", "recovery", "none", "unknown"]
    reason: str


def cold_start(inputs: ColdStartInputs) -> ColdStartChoice:
    cost = inputs.checkpoint_cost_s
    if cost is None or cost <= 0:
        return ColdStartChoice(None, "unknown", "cold start: no checkpoint measured yet to price one")
    mtbf = inputs.mtbf_s or inputs.default_mtbf_s
    mtbf_said = (f"MTBF {mtbf:,.0f} s" if inputs.mtbf_s else
                 f"default MTBF {mtbf / 3600:g} h (no failure seen yet)")
    young = young_interval_s(cost, mtbf)
    budget = 1.0 - inputs.safety_margin
    # what the latency holds besides the interval: the checkpoint, or more if the observed p99 says so
    processing_ms = cost * 1000
    if inputs.observed_p99_ms is not None:
        processing_ms = max(processing_ms, inputs.observed_p99_ms - inputs.current_interval_s * 1000)
    latency_bound = math.inf if inputs.latency_target_ms is None else \
        (inputs.latency_target_ms * budget - processing_ms) / 1000
    fixed = statistics.median(inputs.recoveries_s) if inputs.recoveries_s else inputs.default_fixed_recovery_s
    fixed_said = (f"{fixed:.1f} s fixed (median of {len(inputs.recoveries_s)} recoveries seen)" if inputs.recoveries_s
                  else f"{fixed:.1f} s fixed (default: no recovery seen yet)")
    recovery_bound = (inputs.recovery_target_s * budget - fixed) * inputs.headroom
    bounds = {"young": young, "latency": latency_bound, "recovery": recovery_bound}
    limit = min(bounds, key=lambda name: bounds[name])
    wanted = min(inputs.interval_max_s, max(inputs.interval_min_s, bounds[limit]))
    wanted = round(wanted, 1) if wanted < 10 else float(round(wanted))
    binding: Literal["latency", "recovery", "none"] = "latency" if limit == "latency" else \
        "recovery" if limit == "recovery" else "none"
    why = (f"cold start (no models): Young {young:,.1f} s from checkpoint cost {cost:.2f} s and {mtbf_said}; "
           + ("no latency target, " if inputs.latency_target_ms is None else
              f"latency target allows {max(0.0, latency_bound):,.1f} s, ")
           + f"recovery target {max(0.0, recovery_bound):,.1f} s "
           f"({fixed_said}, headroom x{inputs.headroom:g})")
    if bounds[limit] < inputs.interval_min_s:
        why += f"; even the shortest interval ({inputs.interval_min_s:g} s) may miss the {limit} target"
    if not math.isfinite(wanted):
        return ColdStartChoice(None, "unknown", "cold start: no finite interval")
    return ColdStartChoice(wanted, binding, why)
