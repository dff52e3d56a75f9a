"""Models of the live job from what is known of it: the profile's runs plus every live recovery.

Profiled recoveries and live ones are the same measurement (chaos's analysis), so they are fitted
together; a live failure at an interval or load the profile never ran is exactly the data a
profile-only model lacks. Refitting is cheap at these sizes (tens of points), so the tuner refits on
every new failure rather than updating incrementally.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from chronos.optimizer.evaluate import JobModels
from chronos.optimizer.model_values import Model, Observation
from chronos.profiler.records import ProfileRun

Fitter = Callable[[Sequence[Observation], int], Model]

MIN_OBSERVATIONS = 4


@dataclass(frozen=True)
class ProfileObservations:
    recovery: tuple[Observation, ...]
    latency: tuple[Observation, ...]  # steady-state p99 (ms) per run
    checkpoint: tuple[Observation, ...] = ()  # median checkpoint duration (s) per run


def profile_observations(runs: Sequence[ProfileRun]) -> ProfileObservations:
    recovery, latency, checkpoint = [], [], []
    for run in runs:
        if run.status != "completed":
            continue
        interval_s = run.config.interval_ms / 1000
        recovery += [Observation(interval_s, run.load_rate, m.recovery_s) for m in run.recoveries
                     if m.recovery_s is not None]
        if run.steady is not None and run.steady.p99_ms is not None:
            latency.append(Observation(interval_s, run.load_rate, run.steady.p99_ms))
        if run.steady is not None and run.steady.checkpoint_duration_ms:
            checkpoint.append(Observation(interval_s, run.load_rate, run.steady.checkpoint_duration_ms / 1000))
    return ProfileObservations(tuple(recovery), tuple(latency), tuple(checkpoint))


def _fit_grid(observations: list[Observation], seed: int, families: tuple[str, ...] | None) -> Model:
    """Runs in the child: only there is the fitting library imported."""
    from chronos.optimizer.models import fit_grid

    return fit_grid(observations, seed, families=families)


def linear_only(observations: Sequence[Observation], seed: int) -> Model:
    """Khaos's models (ordinary least squares on interval and rate), for the Khaos-style strategy."""
    return fit_in_child(observations, seed, families=("linear",))


def fit_in_child(observations: Sequence[Observation], seed: int, families: tuple[str, ...] | None = None) -> Model:
    """Fit in a short-lived child process and bring back a numpy table of its predictions: the tuner
    runs for days, and scikit-learn (with scipy and pandas) would hold ~150 MB of it for one fit."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_fit_grid, list(observations), seed, families).result(timeout=600)


class ModelBook:
    """The current models, refitted when a live recovery is added."""

    def __init__(self, profile: ProfileObservations, live_recoveries: Sequence[Observation] = (), seed: int = 0,
                 fitter: Fitter = fit_in_child, learn_online: bool = True) -> None:
        self._profile = profile
        self._learn_online = learn_online  # Khaos fitted once, on its profile
        self._live = list(live_recoveries)
        self._seed = seed
        self._fitter = fitter
        self._latency = self._fit(profile.latency)
        self._checkpoint = self._fit(profile.checkpoint)
        self.models = JobModels(self._fit([*profile.recovery, *(self._live if learn_online else ())]), self._latency,
                                self._checkpoint)

    def _fit(self, observations: Sequence[Observation]) -> Model | None:
        return self._fitter(observations, self._seed) if len(observations) >= MIN_OBSERVATIONS else None

    @property
    def live_recoveries(self) -> int:
        return len(self._live)

    def add_recovery(self, observation: Observation) -> JobModels:
        if not self._learn_online:
            return self.models
        self._live.append(observation)
        self.models = JobModels(self._fit([*self._profile.recovery, *self._live]), self._latency, self._checkpoint)
        return self.models
