"""Models of the live job from what is known of it: the profile's runs plus every live recovery.

Profiled recoveries and live ones are the same measurement (chaos's analysis), so they are fitted
together; a live failure at an interval or load the profile never ran is exactly the data a
profile-only model lacks. Refitting is cheap at these sizes (tens of points), so the tuner refits on
every new failure rather than updating incrementally.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Protocol

from chronos.errors import ChronosError
from chronos.model import describe
from chronos.optimizer.evaluate import JobModels
from chronos.optimizer.model_values import Model, Observation, ProfileObservations
from chronos.tune.journal import Journal


class Fitter(Protocol):
    """Fits one kind of model: its points, the seed, the job's capacity (recovery only) and whether what is modelled
    only rises with interval and rate (recovery: `chronos.optimizer.models.fit_best`'s `rising`)."""

    def __call__(self, observations: Sequence[Observation], seed: int, capacity: float | None,
                 rising: bool, /) -> Model: ...


MIN_OBSERVATIONS = 4
FIT_TIMEOUT_S = 300.0  # a fit takes 20-40 s here; one not done by then is killed, and the old models stay
MAX_LIVE_LATENCIES = 144  # a day of ten-minute windows: the newest are fitted, beside the profile's points
MAX_LIVE_RECOVERIES = 500  # the newest live recoveries fitted: a bounded memory for a tuner that runs for weeks


class FitFailed(ChronosError):
    """A model could not be fitted (the child timed out, was killed, or raised): keep the models there are."""


def _fit_and_send(out: Connection, observations: list[Observation], seed: int,
                  families: tuple[str, ...] | None, capacity: float | None, rising: bool = False) -> None:
    """Runs in the child: only there is the fitting library imported."""
    try:
        from chronos.optimizer.models import fit_grid

        out.send(("ok", fit_grid(observations, seed, families=families, capacity=capacity, rising=rising)))
    except Exception as exc:  # noqa: BLE001 - whatever the library raises goes back as one line
        out.send(("error", describe(exc)))
    finally:
        out.close()


ChildTarget = Callable[[Connection, list[Observation], int, "tuple[str, ...] | None", "float | None", bool], None]


def fit_in_child(observations: Sequence[Observation], seed: int, families: tuple[str, ...] | None = None,
                 timeout_s: float = FIT_TIMEOUT_S, target: ChildTarget = _fit_and_send,
                 capacity: float | None = None, rising: bool = False) -> Model:
    """Fit in a short-lived child process and bring back a numpy table of its predictions: the tuner
    runs for days, and scikit-learn (with scipy and pandas) would hold ~150 MB of it for one fit.

    Never waited on without a deadline: a child that is killed, paused or hung costs at most `timeout_s`,
    is killed, and raises FitFailed (a process pool would wait for its worker on the way out, forever)."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=target, args=(send, list(observations), seed, families, capacity, rising),
                            name="chronos-model-fit", daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout_s):
            raise FitFailed(f"the model fit did not finish within {timeout_s:.0f} s; its process was killed")
        try:
            kind, value = receive.recv()
        except (EOFError, OSError):
            child.join(5)
            raise FitFailed(f"the model-fitting process died (exit code {child.exitcode})") from None
        if kind != "ok":
            raise FitFailed(f"the model fit failed: {value}")
        model: Model = value
        return model
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)


def fit_best_in_child(observations: Sequence[Observation], seed: int, capacity: float | None,
                      rising: bool) -> Model:
    """The default Fitter: every family, in a child."""
    return fit_in_child(observations, seed, capacity=capacity, rising=rising)


class ModelBook:
    """The current models, refitted when a live recovery is added."""

    def __init__(self, profile: ProfileObservations, live_recoveries: Sequence[Observation] = (), seed: int = 0,
                 fitter: Fitter = fit_best_in_child, learn_online: bool = True, latency_rising: bool = False,
                 live_latencies: Sequence[Observation] = ()) -> None:
        self._profile = profile
        self._learn_online = learn_online  # Khaos fitted once, on its profile
        self._live = list(live_recoveries)[-MAX_LIVE_RECOVERIES:]
        # Windows of the live job's own p99 (chronos.tune.live_latency), the journaled ones of earlier tuners first.
        self._live_latency = list(live_latencies)[-MAX_LIVE_LATENCIES:]
        self._latency_rising = latency_rising
        self._seed = seed
        self._fitter = fitter
        self.fit_failures = 0
        self.last_fit_error: str | None = None
        # An exactly-once job's p99 does not fall as the interval grows (its output waits for the commit): fitted
        # rising, as a recovery is (JobSpec.commits_on_checkpoint).
        self._latency = self._fit([*profile.latency, *(self._live_latency if learn_online else ())], None,
                                  rising=latency_rising)
        self._checkpoint = self._fit(profile.checkpoint, None)
        self.models = JobModels(self._fit_recovery([*profile.recovery, *(self._live if learn_online else ())], None),
                                self._latency, self._checkpoint)

    def _fit_recovery(self, observations: Sequence[Observation], previous: Model | None) -> Model | None:
        """A recovery only adds time as the interval or the load grows (more to replay): fitted rising."""
        return self._fit(observations, previous, self._profile.capacity, rising=True)

    def _fit(self, observations: Sequence[Observation], previous: Model | None,
             capacity: float | None = None, rising: bool = False) -> Model | None:
        """A fresh fit, or (if fitting fails) the previous model, the failure counted and kept to be said."""
        if len(observations) < MIN_OBSERVATIONS:
            return None
        try:
            return self._fitter(observations, self._seed, capacity, rising)
        except FitFailed as exc:
            self.fit_failures += 1
            self.last_fit_error = str(exc)
            return previous

    @property
    def live_recoveries(self) -> int:
        return len(self._live)

    @property
    def live_latencies(self) -> int:
        return len(self._live_latency)

    def add_latency(self, observation: Observation) -> JobModels:
        """A window of the live job's own p99 at its interval: the latency model refitted with the profile's points
        and the live ones (the newest MAX_LIVE_LATENCIES), as a live recovery refits the recovery model."""
        if not self._learn_online:
            return self.models
        self._live_latency = [*self._live_latency, observation][-MAX_LIVE_LATENCIES:]
        self._latency = self._fit([*self._profile.latency, *self._live_latency], self._latency,
                                  rising=self._latency_rising)
        self.models = JobModels(self.models.recovery, self._latency, self._checkpoint)
        return self.models

    def add_recovery(self, observation: Observation) -> JobModels:
        if not self._learn_online:
            return self.models
        self._live = [*self._live, observation][-MAX_LIVE_RECOVERIES:]
        recovery = self._fit_recovery([*self._profile.recovery, *self._live], self.models.recovery)
        self.models = JobModels(recovery, self._latency, self._checkpoint)
        return self.models


class FitSlots(Protocol):
    """A bound on the model-fitting children alive at once across the jobs of one controller
    (threading.BoundedSemaphore): fifty jobs failing together must not start fifty scikit-learn processes."""

    def __enter__(self) -> object: ...
    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None, /) -> None: ...


def job_model_book(profile: ProfileObservations, journal: Journal, job_name: str, strategy: str = "chronos",
                   fit_timeout_s: float = 300.0, latency_rising: bool = False,
                   slots: FitSlots | None = None) -> ModelBook:
    """The models of one job: its profiles' points plus what the live job taught earlier tuners (its journaled
    recoveries and steady-window p99s). Khaos's linear models for the Khaos-style strategy, fitted once (as
    published: one family, nothing set aside, nothing learnt online); the best held-out family otherwise, each fit in
    a child process that gives up after `fit_timeout_s` (counted from when it got one of `slots`, if given).
    `latency_rising`: the job's output commits on checkpoints."""
    live = [Observation(r.interval_ms / 1000, r.rate, r.recovery_s) for r in journal.recoveries(job_name)
            if r.recovery_s is not None and r.interval_ms]
    khaos = strategy == "khaos"

    def fitter(points: Sequence[Observation], seed: int, capacity: float | None, rising: bool) -> Model:
        with slots if slots is not None else nullcontext():
            return fit_in_child(points, seed, families=("linear",) if khaos else None, timeout_s=fit_timeout_s,
                                capacity=capacity, rising=rising and not khaos)

    latencies = [Observation(w.interval_ms / 1000, w.rate, w.p99_ms) for w in journal.latencies(job_name)]
    return ModelBook(profile, live, fitter=fitter, learn_online=not khaos, latency_rising=latency_rising,
                     live_latencies=latencies)
