"""The model-fitting child never holds the tuner: whatever happens to it (hung, paused, killed, raising),
the fit returns within its deadline as FitFailed, the child is gone, and the models in use stay.
Real child processes (spawned, as in use); their bodies are stand-ins defined here."""

from __future__ import annotations

import os
import signal
import time
from multiprocessing.connection import Connection

import psutil
import pytest

from chronos.optimizer.model_values import Observation, ProfileObservations
from chronos.optimizer.models import fit_best
from chronos.tune.fitting import FitFailed, ModelBook, fit_in_child

POINTS = [Observation(i, r, 20 + i * r / 2000) for i in (2, 5, 10, 30) for r in (1000, 4000)]


def hang(out: Connection, *args: object) -> None:
    time.sleep(600)


def pause_itself(out: Connection, *args: object) -> None:
    os.kill(os.getpid(), signal.SIGSTOP)


def die(out: Connection, *args: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def raise_(out: Connection, *args: object) -> None:
    out.send(("error", "LinAlgError: SVD did not converge"))
    out.close()


def _children() -> set[int]:
    """Spawned children of this process that still run (not the resource tracker multiprocessing keeps)."""
    return {p.pid for p in psutil.Process().children()
            if p.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(p.cmdline())}


@pytest.mark.parametrize(("target", "deadline_s", "says"), [
    (hang, 3, "did not finish within 3 s"), (pause_itself, 3, "did not finish within 3 s"),
    # A child that dies or raises must first be spawned: on a loaded 2-core machine that alone took over 3 s.
    (die, 30, r"died \(exit code -9\)"), (raise_, 30, "SVD did not converge"),
])
def test_a_child_that_hangs_pauses_dies_or_raises_is_a_fit_failure_within_the_deadline(target, deadline_s, says) -> None:  # type: ignore[no-untyped-def]
    before = _children()
    start = time.monotonic()
    with pytest.raises(FitFailed, match=says):
        fit_in_child(POINTS, 0, timeout_s=deadline_s, target=target)
    assert time.monotonic() - start < deadline_s + 10, "the deadline, plus a spawn and a kill"
    assert _children() <= before, "the child is gone"


def test_the_book_keeps_its_models_when_a_refit_fails_and_counts_the_failure() -> None:
    fits = iter(["ok", "fail"])

    def flaky(observations, seed, capacity=None, rising=False):  # type: ignore[no-untyped-def]
        if next(fits) == "fail":
            raise FitFailed("the model-fitting process died (exit code -9)")
        return fit_best(observations, seed=seed)

    book = ModelBook(ProfileObservations(tuple(POINTS), ()), fitter=flaky)
    before = book.models.recovery
    assert before is not None and book.fit_failures == 0
    after = book.add_recovery(Observation(15, 2000, 36))
    assert after.recovery is before and book.fit_failures == 1 and "exit code -9" in (book.last_fit_error or "")
    assert book.live_recoveries == 1, "the point is kept for the next fit"


def test_the_recovery_model_is_fitted_rising_with_the_jobs_capacity_and_the_others_without() -> None:
    seen = []

    def recording(observations, seed, capacity=None, rising=False):  # type: ignore[no-untyped-def]
        seen.append((observations[0].value, capacity, rising))
        return fit_best(observations, seed=seed, capacity=capacity, rising=rising)

    latency = tuple(Observation(o.interval_s, o.rate, 100.0 * o.value) for o in POINTS)
    book = ModelBook(ProfileObservations(tuple(POINTS), latency, (), capacity=9000.0), fitter=recording)
    assert seen == [(100.0 * POINTS[0].value, None, False), (POINTS[0].value, 9000.0, True)]
    book.add_recovery(Observation(15, 2000, 36))
    assert seen[-1] == (POINTS[0].value, 9000.0, True)
    assert book.models.recovery is not None and "phases" in dict(book.models.recovery.report.mape_by_family)


def test_the_p99_model_of_a_job_whose_output_commits_on_checkpoints_is_fitted_rising() -> None:
    seen = []

    def recording(observations, seed, capacity=None, rising=False):  # type: ignore[no-untyped-def]
        seen.append((observations[0].value, rising))
        return fit_best(observations, seed=seed, capacity=capacity, rising=rising)

    latency = tuple(Observation(o.interval_s, o.rate, 100.0 * o.value) for o in POINTS)
    ModelBook(ProfileObservations(tuple(POINTS), latency, ()), fitter=recording, latency_rising=True)
    assert seen[0] == (100.0 * POINTS[0].value, True), "p99 rising, as the recovery is"
