"""When to fire a fault: pure functions of a job's checkpoint history and the current time.

The worst case (a few seconds before the next checkpoint is due, as Khaos timed its failures)
maximises the records replayed after recovery; the best case (just after a checkpoint completes)
minimises them. The difference between the two is the physics the optimizer relies on.
"""

from __future__ import annotations

import itertools
import random
import statistics
from dataclasses import dataclass
from typing import Protocol

from chronos.model import CheckpointHistory


class NoCheckpointYet(ValueError):
    """A strategy that aims relative to checkpoints needs at least one completed checkpoint."""


class FiringStrategy(Protocol):
    def fire_at_ms(self, history: CheckpointHistory, now_ms: int) -> int:
        """Wall-clock millisecond at which to fire, never before `now_ms`."""
        ...


def trigger_period_ms(history: CheckpointHistory) -> int:
    """The observed spacing of checkpoint triggers: the configured interval, or the median gap between
    recent triggers when checkpoints run slower than that (long durations, min pause)."""
    triggers = [c.trigger_ms for c in history.completed[-10:]]
    gaps = [b - a for a, b in itertools.pairwise(triggers) if b > a]
    observed = int(statistics.median(gaps)) if gaps else 0
    return max(history.interval_ms, observed)


def next_trigger_after_ms(history: CheckpointHistory, t_ms: int) -> int:
    """The first checkpoint trigger expected strictly after `t_ms`, phased on the last completed one."""
    if not history.completed:
        raise NoCheckpointYet("the job has no completed checkpoint to aim at yet")
    period = trigger_period_ms(history)
    last = history.completed[-1].trigger_ms
    if t_ms < last:
        return last
    return last + (((t_ms - last) // period) + 1) * period


@dataclass(frozen=True)
class FixedOffset:
    offset_s: float

    def fire_at_ms(self, history: CheckpointHistory, now_ms: int) -> int:
        return now_ms + int(self.offset_s * 1000)


@dataclass(frozen=True)
class WorstCase:
    """`before_s` seconds before the next checkpoint is due: nearly a whole interval to replay."""

    before_s: float = 3.0

    def fire_at_ms(self, history: CheckpointHistory, now_ms: int) -> int:
        before = int(self.before_s * 1000)
        if before >= trigger_period_ms(history):
            raise ValueError(f"cannot fire {self.before_s} s before a checkpoint that comes every "
                             f"{trigger_period_ms(history) / 1000:g} s")
        return next_trigger_after_ms(history, now_ms + before) - before


@dataclass(frozen=True)
class BestCase:
    """`after_s` seconds after the next checkpoint is expected to complete: little to replay."""

    after_s: float = 0.5

    def fire_at_ms(self, history: CheckpointHistory, now_ms: int) -> int:
        if not history.completed:
            raise NoCheckpointYet("the job has no completed checkpoint to aim at yet")
        duration = int(statistics.median(c.duration_ms for c in history.completed[-10:]))
        after = int(self.after_s * 1000)
        last = history.completed[-1]
        if last.completed_ms + after >= now_ms:
            return last.completed_ms + after
        period = trigger_period_ms(history)
        trigger = last.trigger_ms + period
        while trigger + duration + after < now_ms:
            trigger += period
        return trigger + duration + after


@dataclass(frozen=True)
class PoissonArrivals:
    """Failures as a Poisson process with a mean time between failures; seeded, so reproducible.
    `index` numbers the faults of a run: each gets its own seeded exponential inter-arrival draw."""

    mtbf_s: float
    seed: int = 0
    index: int = 0

    def delay_ms(self) -> int:
        rng = random.Random(self.seed * 1_000_003 + self.index)
        return int(rng.expovariate(1.0 / self.mtbf_s) * 1000)

    def fire_at_ms(self, history: CheckpointHistory, now_ms: int) -> int:
        return now_ms + self.delay_ms()
