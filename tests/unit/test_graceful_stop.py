"""Every long command stops the same way: the first SIGINT/SIGTERM asks it to stop after the current step,
a second one aborts (or, for a load generator finishing its batch, asks again), and the handlers that were
there before come back whatever happens."""

from __future__ import annotations

import os
import signal

import pytest

from chronos.cli.graceful import graceful_stop


def test_the_first_signal_asks_the_second_aborts_and_the_old_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt), graceful_stop(said.append, "stopping after this step") as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set() and said == ["stopping after this step"]
        os.kill(os.getpid(), signal.SIGINT)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_load_generator_is_only_asked_again() -> None:
    with graceful_stop(second_aborts=False) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.is_set()
