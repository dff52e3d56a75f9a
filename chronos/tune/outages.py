"""Which sources are out, so each outage is said twice in all: when it begins and when it ends.

A tuner that collects every five seconds would otherwise say "Kafka unreachable" seven hundred times
an hour of a broker outage, and an operator reading the log learns nothing from the seven hundredth.
Pure: fed each reading's failures and the time, it returns the events to say.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from chronos.model import SourceFailure


@dataclass(frozen=True)
class OutageEvent:
    source: str
    kind: Literal["began", "ended"]
    error: str  # began: what failed first; ended: what it was
    duration_s: float | None = None  # ended: how long it lasted


class Outages:
    def __init__(self) -> None:
        self._open: dict[str, tuple[float, str]] = {}  # source -> (since, first error)

    @property
    def out(self) -> tuple[str, ...]:
        return tuple(sorted(self._open))

    def feed(self, failures: Iterable[SourceFailure], now: float) -> list[OutageEvent]:
        failing = {f.source: f for f in failures}
        events = []
        for source, failure in failing.items():
            if source not in self._open:
                self._open[source] = (now, failure.error)
                events.append(OutageEvent(source, "began", failure.error))
        for source in [s for s in self._open if s not in failing]:
            since, error = self._open.pop(source)
            events.append(OutageEvent(source, "ended", error, now - since))
        return events
