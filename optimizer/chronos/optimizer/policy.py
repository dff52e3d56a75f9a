"""What the user asks of the tuner: QoS targets, how conservative to be, and how calm to stay.

A pydantic model because it is the config boundary (CLI flags, a YAML file, Helm values): a bad value
is refused with the field's name before anything runs. Every knob has a default and says why it is
there; the stabilization ones follow the Flink Kubernetes Operator autoscaler's (stabilization
interval, minimum change, a cap on scalings), since a retune costs seconds of downtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chronos.errors import InvalidInput
from chronos.model import MAX_SECONDS, MIN_SECONDS

Strategy = Literal["chronos", "static", "young", "daly", "khaos"]
FallbackRule = Literal["ceiling", "follow"]


class TunePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    latency_p99_ms: float | None = Field(
        None, ge=1, le=MAX_SECONDS * 1000,
        description="Target: p99 end-to-end latency of the output, in ms. None: no latency target, the job is tuned for "
                    "recovery and overhead alone (a job whose latency chronos cannot read: no output topic known, no "
                    "latency markers).")
    recovery_s: float = Field(ge=MIN_SECONDS, le=MAX_SECONDS,
                              description="Target: time from a failure back to steady state, in s.")
    strategy: Strategy = Field(
        "chronos", description="chronos (models + targets), or a baseline: static, young, daly (Young/Daly from "
                               "the measured checkpoint cost and the MTBF of the failures seen), khaos (Khaos's "
                               "linear models and objective: least latR + recR + |latR - recR| with both below 1).")
    static_interval_s: float | None = Field(None, ge=MIN_SECONDS, le=MAX_SECONDS,
                                            description="The interval the static strategy holds.")
    interval_min_s: float = Field(1.0, ge=MIN_SECONDS, le=MAX_SECONDS, description="Shortest interval ever chosen.")
    interval_max_s: float = Field(120.0, ge=MIN_SECONDS, le=MAX_SECONDS, description="Longest interval ever chosen.")
    candidates: int = Field(24, ge=2, le=200, description="Intervals considered, spaced evenly on a log scale.")
    extrapolation_factor: float = Field(
        1.5, ge=1, le=1e6,
        description="Strategy chronos chooses only intervals within this factor of those its models were fitted on "
                    "(the profile's, and the live job's own recoveries). Beyond them a model predicts whatever its "
                    "family's shape says: a busy job's profile measured at 2-20 s, flat there, had chronos run 120 s "
                    "and recover in 122-171 s against a 52.5 s target. A large factor turns this off.")
    conservative: bool = Field(
        True, description="Judge a candidate by the upper bound of its prediction interval, not its median.")
    safety_margin: float = Field(
        0.1, ge=0, lt=1, description="Extra headroom: a prediction must stay under (1 - margin) x target.")
    startup_grace_s: float = Field(
        90.0, ge=0, le=MAX_SECONDS,
        description="No decision this long after the job (re)started: its signals are still settling.")
    cooldown_s: float = Field(300.0, ge=0, le=MAX_SECONDS,
                              description="Least time between two restart retunes; each costs downtime (a paced "
                                          "job's cadence changes are free of it).")
    min_change_rel: float = Field(
        0.2, ge=0, le=10, description="Ignore a change smaller than this share of the current interval ...")
    min_change_abs_s: float = Field(2.0, ge=0, le=MAX_SECONDS, description="... or smaller than this many seconds.")
    max_retunes_per_hour: int = Field(4, ge=0, le=3600, description="Cap on restart retunes in any hour (not on a "
                                                                 "paced job's cadence changes); 0: none.")
    cadence_min_change_rel: float = Field(
        0.1, ge=0, le=10, description="A paced job's cadence: ignore a change smaller than this share of it ...")
    cadence_min_change_abs_s: float = Field(
        0.5, ge=0, le=MAX_SECONDS, description="... or smaller than this many seconds (a cadence is held to ~0.1 s).")
    lengthen_after_s: float = Field(
        60.0, ge=0, le=MAX_SECONDS,
        description="A paced job's cadence is shortened at once, but lengthened only as far as every decision of "
                    "this many seconds wanted: a cadence change costs nothing, so the cooldown and the hourly cap "
                    "(for restarts) do not hold it; this keeps it from following a dip in the load into a longer "
                    "interval that the next burst makes too long.")
    fallback_rule: FallbackRule = Field(
        "ceiling",
        description="A paced job's own interval (the fallback Flink keeps if chronos dies) is changed only by a "
                    "restart. ceiling: it must meet the recovery target at the highest input rate seen while tuning "
                    "(or fallback_design_rate), so a swing of the load that has been seen before moves only the "
                    "cadence; when it must shorten it is chosen for fallback_headroom x that rate, so one restart "
                    "covers the next rise too. follow: it tracks the forecast peak, as safe for the next minutes but "
                    "a restart whenever the load rises.")
    fallback_headroom: float = Field(
        1.25, ge=1, le=10, description="ceiling: a fallback that must shorten is chosen for this multiple of the rate.")
    fallback_design_rate: float | None = Field(
        None, gt=0, le=1e12,
        description="ceiling: the input rate (records/s) the fallback must hold at even before it is seen (a daily "
                    "peak): the job's own interval is then chosen once, at adoption.")
    fallback_lengthen_factor: float = Field(
        2.0, ge=1, le=100,
        description="ceiling: the job's own interval is lengthened by a restart (it caps the cadence: Flink's timer "
                    "checkpoints at it) only when the latency target is at stake at it, or when the cadence wanted "
                    "is at least this many times longer (a restart costs seconds of downtime; overhead alone "
                    "rarely pays for it).")
    compromise_tolerance: float = Field(
        0.1, ge=0, le=10, description="When no interval meets both targets: candidates whose worst ratio to its target is "
                               "within this of the best compromise's count as equally good, and the cheapest is "
                               "chosen. Buying a sliver of predicted recovery with several times the checkpoint "
                               "overhead helps no one.")
    mtbf_s: float | None = Field(
        None, ge=1, le=10 * 365 * 86_400, description="Mean time between failures for Young/Daly, when known (an SLA, "
                                                      "an incident history); unset, it is estimated from the failures seen.")
    cold_mtbf_s: float = Field(
        86_400.0, ge=1, le=10 * 365 * 86_400,
        description="Cold start (no models yet): the MTBF assumed until a failure is seen (mtbf_s, when set, wins).")
    cold_fixed_recovery_s: float = Field(
        30.0, ge=0, le=MAX_SECONDS,
        description="Cold start: a recovery's fixed part (detection, rescheduling, restore) until one is measured "
                    "(a live failure, or the --allow-fault probe).")
    cold_headroom: float = Field(
        1.0, ge=0.001, le=100,
        description="Cold start: spare capacity as a share of the input rate (1: the job can read twice what "
                    "arrives); the replay of one interval's input is caught up at it.")
    horizon_s: float = Field(300.0, ge=MIN_SECONDS, le=MAX_SECONDS,
                             description="Decide for the peak input rate forecast over this horizon.")
    latency_window_s: float = Field(60.0, ge=MIN_SECONDS, le=MAX_SECONDS,
                                    description="Observed p99 latency is taken over this window.")
    calibrate_latency: bool = Field(
        True, description="Scale the latency model by observed / predicted p99 at the current interval, so a "
                          "profile taken on smaller clusters still ranks intervals right on the live job.")

    @model_validator(mode="after")
    def _consistent(self) -> TunePolicy:
        if self.interval_min_s >= self.interval_max_s:
            raise ValueError("interval_min_s must be below interval_max_s")
        if self.strategy == "static" and self.static_interval_s is None:
            raise ValueError("the static strategy needs static_interval_s")
        return self


def policy_fields(data: Mapping[Any, Any], where: str) -> dict[str, Any]:
    """Policy fields as TunePolicy names them, from snake or kebab case (`recovery_s`, `recovery-s`); one written both
    ways is refused in one line rather than one of the two silently winning."""
    fields: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name in fields:
            raise InvalidInput(f"{where}: the policy field {name} is given twice (as {given[name][:40]} and "
                               f"{str(key)[:40]}); give it once")
        fields[name], given[name] = value, str(key)
    return fields
