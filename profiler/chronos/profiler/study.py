"""Which configuration to profile next: an Optuna ask/tell study with its storage passed in.

The first trials are a Latin-hypercube design over (log interval, load), enqueued when the study is
created, so a few runs already span the whole range. After that TPE chooses, told for each run how far
it landed from the QoS boundary (recovery time or p99 latency at its target): the sampler then spends
the remaining runs where the optimizer's decision will be made, not where QoS is clearly met or clearly
missed. The study lives in the storage (SQLite by default), so a profile resumes where it stopped and
Optuna's own tools can inspect it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from chronos.profiler.records import LIVE, ProfileRun, RunConfig


@dataclass(frozen=True)
class ProfileSpace:
    interval_min_s: int = 2
    interval_max_s: int = 60
    load_scales: tuple[float, ...] = (1.0,)
    initial_design: int = 4
    recovery: tuple[str, ...] = (LIVE,)  # the recovery settings explored (RecoveryVariant names, live first)

    def distributions(self) -> dict[str, BaseDistribution]:
        distributions: dict[str, BaseDistribution] = {
            "interval_s": IntDistribution(self.interval_min_s, self.interval_max_s, log=True),
            "load_scale": CategoricalDistribution(self.load_scales),
        }
        if len(self.recovery) > 1:  # a profile of the interval alone keeps the study it always had
            distributions["recovery"] = CategoricalDistribution(self.recovery)
        return distributions


T = TypeVar("T")
MODEL_POINTS = 4  # the fewest points a model is fitted and validated from (chronos.tune.fitting.MIN_OBSERVATIONS)


def design_size(parallel: int, load_scales: int) -> int:
    """How many runs the space-filling start takes before the sampler goes for the QoS boundary: enough for a model
    (a profile that affords four runs spends them across the range) and for every load level, and a round of the
    runs at a time. Two at one run at a time left a busy profile at 4, 56 and 58 s: TPE, told the 56 s run recovered
    near the target, asked for 58 s next, and the budget ran out with no model."""
    return max(MODEL_POINTS, load_scales, 2 * parallel)


@dataclass(frozen=True)
class QosTargets:
    max_recovery_s: float
    max_p99_ms: float


def space_filling_design(space: ProfileSpace, n: int, seed: int) -> list[RunConfig]:
    """n points of a Latin hypercube over log(interval) x load (x recovery settings, when explored): every
    stratum of each axis once, and every load (and recovery setting) once n reaches their number."""
    from scipy.stats import qmc

    explored = len(space.recovery) > 1
    points = qmc.LatinHypercube(d=3 if explored else 2, seed=seed).random(n)
    lo, hi = math.log(space.interval_min_s), math.log(space.interval_max_s)
    configs = []
    for u_interval, u_load, *rest in points:
        u_recovery = rest[0] if rest else 0.0
        interval_s = round(math.exp(lo + u_interval * (hi - lo)))
        scale, recovery = _level(space.load_scales, u_load, n), _level(space.recovery, u_recovery, n)
        configs.append(RunConfig(max(space.interval_min_s, min(space.interval_max_s, interval_s)) * 1000, scale,
                                 recovery))
    return configs


def _level(levels: tuple[T, ...], u: float, n: int) -> T:
    """The level of a categorical axis for a point in stratum int(u * n) of n: the strata shared out over the levels
    in order, so every level is drawn once there are at least as many points (reading u itself, four points over
    three loads had missed the middle one)."""
    stratum = min(int(u * n), n - 1)
    return levels[stratum * len(levels) // n]


def boundary_distance(run: ProfileRun, targets: QosTargets, timeout_s: float) -> float | None:
    """How far a run is from the QoS boundary: 0 when its worst recovery or its p99 sits exactly at
    the target. A fault that never recovered counts as recovering at `timeout_s`. None: nothing measured."""
    distances = []
    if run.recoveries:
        worst = max(m.recovery_s if m.recovery_s is not None else timeout_s for m in run.recoveries)
        distances.append(abs(worst / targets.max_recovery_s - 1))
    if run.steady is not None and run.steady.p99_ms is not None:
        distances.append(abs(run.steady.p99_ms / targets.max_p99_ms - 1))
    return min(distances) if distances else None


class ProfileStudy:
    def __init__(self, storage: str | optuna.storages.BaseStorage, name: str, space: ProfileSpace, seed: int) -> None:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space = space
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=space.initial_design)
        self.study = optuna.create_study(storage=storage, study_name=name, direction="minimize", sampler=sampler,
                                         load_if_exists=True)
        if not self.study.trials:
            for config in space_filling_design(space, space.initial_design, seed):
                self.study.enqueue_trial({"interval_s": config.interval_ms // 1000, "load_scale": config.load_scale,
                                          **({"recovery": config.recovery} if len(space.recovery) > 1 else {})})

    def requeue_interrupted(self) -> int:
        """Trials left RUNNING by a profile that was stopped: failed, and their configuration queued
        again (behind any design points still waiting). Returns how many."""
        stale = self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        for trial in stale:
            self.study.tell(trial.number, state=TrialState.FAIL)
            self.study.enqueue_trial(dict(trial.params))
        return len(stale)

    def ask(self) -> tuple[int, RunConfig]:
        trial = self.study.ask(self.space.distributions())
        return trial.number, RunConfig(int(trial.params["interval_s"]) * 1000, float(trial.params["load_scale"]),
                                       str(trial.params.get("recovery", LIVE)))

    def substitute(self, asked: int, config: RunConfig) -> tuple[int, RunConfig]:
        """A trial at `config` instead of the asked one, which no longer fits the profile's budget (chronos.profiler
        .budget_fit): added as under way, so it is told like any other and a resumed profile reruns it if stopped. The
        asked trial is left under way too: a resume queues it again, with time of its own."""
        params = {"interval_s": config.interval_ms // 1000, "load_scale": config.load_scale,
                  **({"recovery": config.recovery} if len(self.space.recovery) > 1 else {})}
        self.study.add_trial(optuna.trial.create_trial(state=TrialState.RUNNING, params=params,
                                                       distributions=self.space.distributions(),
                                                       user_attrs={"substitutes_trial": asked}))
        return self.study.get_trials(deepcopy=False)[-1].number, config

    def tell(self, number: int, value: float | None) -> None:
        if value is None:
            self.study.tell(number, state=TrialState.FAIL)
        else:
            self.study.tell(number, value)

    def completed(self) -> int:
        return len(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
