"""One way for a long command to stop when asked: the first SIGINT/SIGTERM sets an event the work checks
between steps (a retune in flight, a profiling run's cleanup, a batch of events is finished first); a second
one raises KeyboardInterrupt (the user does not want to wait). The previous handlers come back on exit,
whatever happens, so a command run in-process (tests, the bench) leaves the interpreter as it found it."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def graceful_stop(say: Callable[[str], None] | None = None, what: str = "stopping",
                  second_aborts: bool = True) -> Iterator[threading.Event]:
    """The stop event, set by the first signal (`what` is said through `say`). With `second_aborts`
    False, later signals only set it again (a load generator that must flush its last batch)."""
    stop = threading.Event()

    def handler(signum: int, _: object) -> None:
        if stop.is_set() and second_aborts:
            raise KeyboardInterrupt
        stop.set()
        if say is not None:
            say(what)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
