"""What a profile was started with, stored beside its runs so `chronos profile run --resume` continues it
exactly: the job's spec, the workload trace, the space, the fault plan and the QoS targets the sampler
aims at. A pydantic model because it crosses a boundary twice (written as JSON, read back on resume)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from chronos.errors import InvalidInput, field_error
from chronos.model import JobSpec
from chronos.profiler.records import RecoveryVariant
from chronos.rates import TraceRate


class ProfileSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    spec: JobSpec
    workload: tuple[tuple[float, ...], tuple[float, ...]]  # (seconds, events/s): the recorded or given trace
    interval_min_s: int
    interval_max_s: int
    loads: tuple[float, ...]  # factors on the workload
    faults: int
    steady_s: float
    seed: int
    warmup_s: float
    hold_s: float
    timeout_s: float
    max_recovery_s: float
    max_p99_ms: float
    # whose stored input sample the copies replay (this profile's own when it recorded one); None: the copies
    # are fed generated vehicle events (the demo jobs)
    sample_profile: str | None = None
    timestamp_field: str = "max_created_ms"  # the job file's io.timestamp-field: the copies' latency
    # recovery settings explored beside the live cluster's: (name, Flink lines over the live ones, spare TMs)
    recovery_variants: tuple[tuple[str, tuple[tuple[str, str], ...], int], ...] = ()
    repeats: int = 0  # extra faults in the first trial (RunPlan.repeats); profiles stored before it had none

    def variants(self) -> tuple[RecoveryVariant, ...]:
        return tuple(RecoveryVariant(name, lines, spare) for name, lines, spare in self.recovery_variants)

    @property
    def trace(self) -> TraceRate:
        return TraceRate(self.workload[0], self.workload[1])

    def to_json(self) -> str:
        return self.model_dump_json()

    @staticmethod
    def from_json(text: str, profile_id: str) -> ProfileSettings:
        try:
            return ProfileSettings.model_validate_json(text)
        except ValidationError as exc:
            raise InvalidInput(f"the settings stored with profile {profile_id} do not read: "
                               f"{field_error(exc.errors())}") from exc
