"""One way for a long command to stop when asked: the first SIGINT/SIGTERM sets an event the work checks
between steps (a retune in flight, a profiling run's cleanup, a batch of events is finished first); a second
one raises KeyboardInterrupt (the user does not want to wait). The previous handlers come back on exit,
whatever happens, so a command run in-process (tests, the bench) leaves the interpreter as it found it.

`abort_after_s` bounds the wait for "between steps": a step stuck in a call (a REST reply trickling in, a
wait on a job) would otherwise keep a first SIGTERM unanswered for as long as the call lasts (`timeout 60
chronos tune` once ran 731 s). When it is given, the stop is turned into that second signal after so many
seconds: KeyboardInterrupt in the main thread, wherever it waits (a blocked read is interrupted by the
signal). Only commands whose every step is safe to cut (the tuner's retunes are journaled write-ahead and
resumed by the next run) pass it; a profile's runs must clean their clusters up and do not.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def graceful_stop(say: Callable[[str], None] | None = None, what: str = "stopping",
                  second_aborts: bool = True, abort_after_s: float | None = None) -> Iterator[threading.Event]:
    """The stop event, set by the first signal (`what` is said through `say`). With `second_aborts`
    False, later signals only set it again (a load generator that must flush its last batch). With
    `abort_after_s`, a stop still running that long after the first signal is aborted as by a second one."""
    stop = threading.Event()
    main = threading.main_thread().ident
    lock = threading.Lock()
    timer: threading.Timer | None = None
    fired = threading.Event()  # the abort signal was sent
    seen = threading.Event()  # ... and reached the handler
    exited = False

    def abort() -> None:
        with lock:
            if exited or main is None:
                return
            fired.set()
            signal.pthread_kill(main, signal.SIGINT)

    def handler(signum: int, _: object) -> None:
        nonlocal timer
        if fired.is_set() and not seen.is_set():
            seen.set()
            if exited:
                return  # the block ended as the abort was sent: nothing left to abort
            raise KeyboardInterrupt
        if stop.is_set() and second_aborts:
            raise KeyboardInterrupt
        stop.set()
        if say is not None:
            say(what)
        if abort_after_s is not None and timer is None:
            timer = threading.Timer(abort_after_s, abort)
            timer.daemon = True
            timer.start()

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield stop
    finally:
        with lock:
            exited = True
            if timer is not None:
                timer.cancel()
        if fired.is_set():
            seen.wait(1.0)  # a sent abort is taken by this handler, not by the one restored below
        for sig, old in previous.items():
            signal.signal(sig, old)
