"""Declarative chaos experiments, in the shape chaostoolkit users know: a steady-state hypothesis
(probes with tolerances), a method (faults with their timing) and rollbacks that always run.

Files are YAML or JSON; everything is validated into typed models here, so a bad file fails with one
line naming the field, before anything is touched.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chronos.chaos.timing import BestCase, FiringStrategy, FixedOffset, PoissonArrivals, WorstCase
from chronos.errors import InvalidInput
from chronos.input_files import read_structured
from chronos.model import SignalSample

HOUR_S = 3600.0  # no window, wait or pause of an experiment is longer: a longer one is a typo, not a plan


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


class Probe(_Model):
    """A signal over the hypothesis window against a limit: latency and lag are judged by their
    maximum, throughput by its median (within `tolerance-pct` of `around`, or against min/max)."""

    name: str = Field(min_length=1, max_length=200)
    signal: Literal["p99_ms", "throughput", "lag"]
    max: float | None = Field(None, ge=0, le=1e15)
    min: float | None = Field(None, ge=0, le=1e15)
    around: float | None = Field(None, ge=0, le=1e15)
    tolerance_pct: float = Field(default=20.0, alias="tolerance-pct", gt=0, le=1000)

    @model_validator(mode="after")
    def _has_a_limit(self) -> Probe:
        if self.max is None and self.min is None and self.around is None:
            raise ValueError("a probe needs max, min or around")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}: no value could pass")
        return self


class Hypothesis(_Model):
    title: str = Field(max_length=200)
    window_s: float = Field(default=20.0, alias="window-s", ge=1, le=HOUR_S)
    probes: tuple[Probe, ...] = Field(min_length=1, max_length=100)


class When(_Model):
    strategy: Literal["worst-case", "best-case", "now", "random"] = "now"
    before_s: float = Field(default=3.0, alias="before-s", ge=0.1, le=HOUR_S)
    after_s: float = Field(default=0.5, alias="after-s", ge=0, le=HOUR_S)
    offset_s: float = Field(default=0.0, alias="offset-s", ge=0, le=HOUR_S)
    mtbf_s: float = Field(default=60.0, alias="mtbf-s", ge=1, le=30 * 86_400)
    seed: int = Field(0, ge=0, lt=2**63)

    def strategy_object(self, index: int = 0) -> FiringStrategy:
        if self.strategy == "worst-case":
            return WorstCase(self.before_s)
        if self.strategy == "best-case":
            return BestCase(self.after_s)
        if self.strategy == "random":
            return PoissonArrivals(self.mtbf_s, self.seed, index)
        return FixedOffset(self.offset_s)


class Action(_Model):
    fault: Literal["kill-taskmanager", "pause-taskmanager", "restart-kafka", "kill-python-worker"]
    when: When = When()
    seconds: float = Field(default=10.0, ge=0.1, le=HOUR_S, description="pause-taskmanager: how long")
    pause_after_s: float = Field(default=0.0, alias="pause-after-s", ge=0, le=HOUR_S)


class Load(_Model):
    """Events the experiment produces itself, from before the first hypothesis check to after the
    last, on keys of its own; afterwards their committed output is checked for exactly-once."""

    rate: float = Field(gt=0, le=10_000_000, description="events per second")
    vehicles: int = Field(default=200, ge=1, le=10_000_000, description="distinct keys")
    verify_timeout_s: float = Field(default=180.0, alias="verify-timeout-s", ge=1, le=HOUR_S)


class Experiment(_Model):
    title: str = Field(max_length=200)
    description: str = Field("", max_length=10_000)
    load: Load | None = None
    steady_state_hypothesis: Hypothesis = Field(alias="steady-state-hypothesis")
    method: tuple[Action, ...] = Field(min_length=1, max_length=1000)
    rollbacks: tuple[Literal["restart-taskmanagers", "resume-taskmanagers", "restart-kafka"], ...] = ()


def load_experiment(path: Path) -> Experiment:
    """Parse and validate an experiment file; every problem is one InvalidInput line."""
    data = read_structured(path, "experiment")
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: an experiment is a mapping with title, steady-state-hypothesis and method")
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's word for a validator's own
        raise InvalidInput(f"{path}: {where}: {message}{more}") from exc


@dataclass(frozen=True)
class ProbeResult:
    name: str
    ok: bool
    observed: float | None
    detail: str


@dataclass(frozen=True)
class HypothesisResult:
    ok: bool
    probes: tuple[ProbeResult, ...]


def _observed(probe: Probe, samples: Sequence[SignalSample]) -> float | None:
    values = [v for s in samples if s.running and (v := getattr(s, probe.signal)) is not None]
    if not values:
        return None
    return float(statistics.median(values)) if probe.signal == "throughput" else float(max(values))


def check_probe(probe: Probe, samples: Sequence[SignalSample]) -> ProbeResult:
    observed = _observed(probe, samples)
    if observed is None:
        return ProbeResult(probe.name, False, None, f"no {probe.signal} reading in the window")
    problems = []
    if probe.max is not None and observed > probe.max:
        problems.append(f"{observed:g} > max {probe.max:g}")
    if probe.min is not None and observed < probe.min:
        problems.append(f"{observed:g} < min {probe.min:g}")
    if probe.around is not None and abs(observed - probe.around) > probe.around * probe.tolerance_pct / 100:
        problems.append(f"{observed:g} not within {probe.tolerance_pct:g}% of {probe.around:g}")
    return ProbeResult(probe.name, not problems, observed, "; ".join(problems) or "ok")


def check_hypothesis(hypothesis: Hypothesis, samples: Sequence[SignalSample]) -> HypothesisResult:
    results = tuple(check_probe(p, samples) for p in hypothesis.probes)
    return HypothesisResult(all(r.ok for r in results), results)
