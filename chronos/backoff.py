"""How long to wait before trying again: exponential backoff with jitter, and the state of one source
that fails and comes back.

A tuner runs for weeks beside a job; its sources (Flink's REST API, the broker, the reporter) go away for
seconds or minutes and come back. Trying again at once turns a blip into a burst of timeouts (every call
of a step waiting its full timeout); never trying again turns it into an outage. Delays grow
geometrically up to a ceiling, and a random share of each (the caller's RNG, seeded) keeps two
tuners, or two sources, from retrying in lockstep. (AWS's "Exponential Backoff And Jitter" shape.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    first_s: float = 1.0
    factor: float = 2.0
    max_s: float = 60.0
    jitter: float = 0.5  # the share of each delay drawn at random: delay in [(1 - jitter) x base, base]

    def base(self, attempt: int) -> float:
        """The delay before retry `attempt` (1 = the first retry) without its jitter."""
        return min(self.max_s, self.first_s * self.factor ** max(0, attempt - 1))

    def delay(self, attempt: int, rng: random.Random) -> float:
        return self.base(attempt) * (1.0 - self.jitter * rng.random())


class SourceGate:
    """One source's health between readings: open while it works; after a failure closed until its
    backoff delay has passed, so a dead source costs one timeout per delay, not one per call."""

    def __init__(self, backoff: Backoff, rng: random.Random) -> None:
        self._backoff = backoff
        self._rng = rng
        self.failures = 0  # consecutive
        self.last_error = ""
        self._retry_at = 0.0

    def open(self, now: float) -> bool:
        return self.failures == 0 or now >= self._retry_at

    def failed(self, now: float, error: str) -> float:
        """Record a failure at `now`; returns the delay before the source is tried again."""
        self.failures += 1
        self.last_error = error
        delay = self._backoff.delay(self.failures, self._rng)
        self._retry_at = now + delay
        return delay

    def passed(self) -> None:
        self.failures = 0
        self.last_error = ""
