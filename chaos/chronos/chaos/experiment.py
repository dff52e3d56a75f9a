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


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


class Probe(_Model):
    """A signal over the hypothesis window against a limit: latency and lag are judged by their
    maximum, throughput by its median (within `tolerance-pct` of `around`, or against min/max)."""

    name: str
    signal: Literal["p99_ms", "throughput", "lag"]
    max: float | None = None
    min: float | None = None
    around: float | None = None
    tolerance_pct: float = Field(default=20.0, alias="tolerance-pct", gt=0)

    @model_validator(mode="after")
    def _has_a_limit(self) -> Probe:
        if self.max is None and self.min is None and self.around is None:
            raise ValueError("a probe needs max, min or around")
        return self


class Hypothesis(_Model):
    title: str
    window_s: float = Field(default=20.0, alias="window-s", gt=0)
    probes: tuple[Probe, ...] = Field(min_length=1)


class When(_Model):
    strategy: Literal["worst-case", "best-case", "now", "random"] = "now"
    before_s: float = Field(default=3.0, alias="before-s", gt=0)
    after_s: float = Field(default=0.5, alias="after-s", ge=0)
    offset_s: float = Field(default=0.0, alias="offset-s", ge=0)
    mtbf_s: float = Field(default=60.0, alias="mtbf-s", gt=0)
    seed: int = 0

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
    seconds: float = Field(default=10.0, gt=0, description="pause-taskmanager: how long")
    pause_after_s: float = Field(default=0.0, alias="pause-after-s", ge=0)


class Load(_Model):
    """Events the experiment produces itself, from before the first hypothesis check to after the
    last, on keys of its own; afterwards their committed output is checked for exactly-once."""

    rate: float = Field(gt=0, description="events per second")
    vehicles: int = Field(default=200, ge=1, description="distinct keys")
    verify_timeout_s: float = Field(default=180.0, alias="verify-timeout-s", gt=0)


class Experiment(_Model):
    title: str
    description: str = ""
    load: Load | None = None
    steady_state_hypothesis: Hypothesis = Field(alias="steady-state-hypothesis")
    method: tuple[Action, ...] = Field(min_length=1)
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
        raise InvalidInput(f"{path}: {where}: {error['msg']}{more}") from exc


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
