"""The one port through which the tuner changes a running job: `realize(job, decision)`.

Why one port: how a decided interval reaches the job depends on the cluster (can it trigger checkpoints?) and
where the job lives (the local stack or a FlinkDeployment), and the loop should know neither. So the choice is
made once, at wiring, and the loop hands every decision to whatever it was given:
- `Restarting`: every change is a restart, by any `Realizer` (stop-with-savepoint and resubmit on the local
  stack, `chronos.tune.retune.Retuner`; a patch of the FlinkDeployment, `chronos.k8s.flink_deployment`);
- `Paced`: a cadence change is a triggered checkpoint at the new cadence (`chronos.tune.pacer.Pacer`, no
  restart); a change of the job's own interval (its fallback) goes through a `Restarting` and the new job is paced
  at the decided cadence at once.

Guarantees are the parts' own: a restart is journaled step by step by its Realizer (a failure raises, and the
loop finishes it from the journal later); a cadence is journaled before it acts by the pacer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from chronos.optimizer.decide import Decision
from chronos.tune.journal import Cadence, Retune
from chronos.tune.retune import Realizer, RetuneOutcome, TunedJob


@dataclass(frozen=True)
class Realized:
    """What a change left: the job as it runs now (its paced cadence included), and what was done to it."""

    job: TunedJob
    retune: RetuneOutcome | None = None  # a restart, whatever its outcome (None: no restart was made)
    cadence: Cadence | None = None  # the cadence the job is now held at (None: not paced by this change)


class JobRealization(Protocol):
    """How decisions reach a running job. `paces`: a cadence change costs no restart (the decision's `pace`)."""

    @property
    def paces(self) -> bool: ...

    def adopt(self, job: TunedJob, take_over: bool) -> Realized:
        """Start acting on `job`: watch it, and (`take_over`) go on with a predecessor's journaled cadence."""
        ...

    def realize(self, job: TunedJob, decision: Decision) -> Realized:
        """Put a decision's `pace` or `retune` in force (a `keep` changes nothing). Raises if a restart fails: it is
        journaled, and `resume` finishes it."""
        ...

    def resume(self, entry: Retune, job: TunedJob) -> Realized:
        """Finish (or roll back) a restart a predecessor, or a failed attempt, left in the journal."""
        ...


class Pacing(Protocol):
    """Holds a paced job's cadence (`chronos.tune.pacer.Pacer`); follows whichever job runs (it measures the
    interval between completed checkpoints of any job, paced or not)."""

    def pace(self, job_id: str, cadence_ms: int, fallback_ms: int, explanation: str) -> Cadence: ...
    def take_over(self, job_id: str) -> Cadence | None: ...
    def follow(self, job_id: str) -> None: ...


JobSettings = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Restarting:
    """Every change is a restart. `job_settings`: job-level recovery settings (restart delay, task-local recovery)
    that go with the next restart, in the resubmitted job's configuration (never a restart of their own).
    `follow`: told the new job's id after each restart (the pacer's watch of checkpoints)."""

    realizer: Realizer
    job_settings: JobSettings = ()
    follow: Callable[[str], None] = lambda job_id: None

    @property
    def paces(self) -> bool:
        return False

    def adopt(self, job: TunedJob, take_over: bool) -> Realized:
        self.follow(job.job_id)
        return Realized(job)

    def realize(self, job: TunedJob, decision: Decision) -> Realized:
        if decision.action == "keep":
            return Realized(job)
        assert decision.action == "retune", "only a paced realization is asked to pace"
        to_s = decision.interval_s if decision.fallback_s is None else decision.fallback_s
        return self.restart(job, max(1, round(to_s * 1000)), decision.explain())

    def restart(self, job: TunedJob, to_ms: int, explanation: str) -> Realized:
        resubmitted, added = with_job_settings(job, self.job_settings)
        outcome = self.realizer.retune(resubmitted, to_ms, explanation + added)
        return self._done(job, outcome)

    def resume(self, entry: Retune, job: TunedJob) -> Realized:
        return self._done(job, self.realizer.resume(entry, job))

    def _done(self, before: TunedJob, outcome: RetuneOutcome) -> Realized:
        self.follow(outcome.job.job_id)  # a replaced job: a paced one goes on at the same cadence
        return Realized(replace(outcome.job, paced_ms=before.paced_ms), outcome)


@dataclass(frozen=True)
class Paced:
    """A cadence change is a paced checkpoint; a fallback change a restart, paced at the new cadence at once."""

    pacing: Pacing
    restarting: Restarting

    @property
    def paces(self) -> bool:
        return True

    def adopt(self, job: TunedJob, take_over: bool) -> Realized:
        self.pacing.follow(job.job_id)
        held = self.pacing.take_over(job.job_id) if take_over else None
        return Realized(job if held is None else replace(job, paced_ms=held.to_ms), cadence=held)

    def realize(self, job: TunedJob, decision: Decision) -> Realized:
        cadence_ms = max(1, round(decision.interval_s * 1000))
        if decision.action == "pace":
            return self._pace(job, cadence_ms, decision.explain())
        if decision.action == "keep":
            return Realized(job)
        restarted = self.restarting.realize(job, decision)
        assert restarted.retune is not None
        if decision.fallback_s is None or restarted.retune.outcome == "abandoned":
            return restarted
        return replace(self._pace(restarted.job, cadence_ms, decision.explain()), retune=restarted.retune)

    def resume(self, entry: Retune, job: TunedJob) -> Realized:
        return self.restarting.resume(entry, job)

    def _pace(self, job: TunedJob, cadence_ms: int, explanation: str) -> Realized:
        entry = self.pacing.pace(job.job_id, cadence_ms, job.settings.interval_ms, explanation)
        return Realized(replace(job, paced_ms=cadence_ms), cadence=entry)


def with_job_settings(job: TunedJob, settings: JobSettings) -> tuple[TunedJob, str]:
    """The job as it is to be resubmitted: its spec's configuration with `settings` over it, and what that adds to
    the retune's explanation (nothing when they are in it already)."""
    current = dict(job.spec.extra_config)
    wanted = {**current, **dict(settings)}
    if wanted == current:
        return job, ""
    added = ", ".join(f"{k}={v}" for k, v in settings if current.get(k) != v)
    spec = replace(job.spec, extra_config=tuple(sorted(wanted.items())))
    return replace(job, spec=spec), f"; with the proposed recovery settings {added}"
