"""What a model of the job takes and gives, without the library that fits it: the tuner's long-lived
process predicts from these and never imports scikit-learn (its import alone costs ~150 MB of RSS)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Observation:
    """One measured point: the configuration and load it was measured at, and the value."""

    interval_s: float
    rate: float
    value: float


@dataclass(frozen=True)
class Prediction:
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class FitReport:
    family: str
    held_out_mape: float
    mape_by_family: tuple[tuple[str, float], ...]
    observations: int
    folds: int
    falling: tuple[str, ...] = ()  # families set aside: their predictions fell as the interval or the rate grew
    # The shortest and longest interval among the points fitted: where the model has seen the job. Beyond it a
    # prediction is an extrapolation of whatever shape the family has (flat, for a tree or a GP). None: not known.
    intervals_s: tuple[float, float] | None = None
    # What the held-out error is to be read against (chronos.optimizer.model_trust): the error of predicting a repeat
    # by the mean of the other repeats at its setting (None: nothing measured twice), and the share of points the
    # prediction interval (`coverage`, nominal) covered when cut without them (None: too few points to tell).
    noise_floor_mape: float | None = None
    coverage: float = 0.8
    held_out_coverage: float | None = None


class Model(Protocol):
    @property
    def report(self) -> FitReport: ...

    def predict(self, interval_s: float, rate: float) -> Prediction: ...


@dataclass(frozen=True)
class ProfileObservations:
    """What a profile says about a job, as model points: recovery (s), steady p99 (ms) and checkpoint
    duration (s), each against interval and load."""

    recovery: tuple[Observation, ...]
    latency: tuple[Observation, ...]  # steady-state p99 (ms) per run
    checkpoint: tuple[Observation, ...] = ()  # median checkpoint duration (s) per run
    capacity: float | None = None  # records/s the job drains a backlog at (its catch-ups' median), if measured
