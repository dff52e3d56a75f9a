"""Every long command stops the same way: the first SIGINT/SIGTERM asks it to stop after the current step,
a second one aborts (or, for a load generator finishing its batch, asks again), and the handlers that were
there before come back whatever happens."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

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


def test_a_stop_whose_step_is_stuck_in_a_call_is_cut_short_at_its_grace() -> None:
    """The main thread blocked reading a socket nobody writes to: the first signal asks, and 0.5 s later the
    read is interrupted (KeyboardInterrupt), not left to its own timeout."""
    quiet, _ = socket.socketpair()
    quiet.settimeout(30)
    with quiet, pytest.raises(KeyboardInterrupt), graceful_stop(abort_after_s=0.5) as stop:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        try:
            quiet.recv(1)
        finally:
            assert stop.is_set() and 0.5 <= time.monotonic() - started < 1.5


def test_a_stop_whose_step_ends_in_its_grace_is_never_cut_short_afterwards() -> None:
    before = signal.getsignal(signal.SIGINT)
    with graceful_stop(abort_after_s=0.3) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set()
    time.sleep(0.6)  # past the grace: nothing arrives after the block, whose handlers are gone
    assert signal.getsignal(signal.SIGINT) == before
