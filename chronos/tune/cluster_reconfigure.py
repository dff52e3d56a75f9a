"""Cluster-level recovery settings put in force on a running cluster: every job stopped with a savepoint, the
cluster restarted with the settings, every job resubmitted from its savepoint. Heartbeats and spare
TaskManagers are read when a JobManager or TaskManager starts, so there is no way around the restart.

The guarantees, and where each comes from:
- never left stopped without a savepoint on record: each job goes through the Retuner's journaled first half
  (`Retuner.stop`: the retune is journaled before the stop, its savepoint right after) and the cluster is
  restarted only once every job's savepoint is journaled; a job whose stop fails keeps running and the
  reconfiguration is called off (the jobs stopped so far resubmitted on the unchanged cluster);
- resumable: the plan (target settings, the jobs) is written before anything is touched; a reconfiguration
  interrupted anywhere is finished by the next call (`resume`): jobs not yet stopped are stopped, the cluster
  restarted unless the target is already in force, and every journaled retune finished by `Retuner.resume`
  (the same resubmission, adoption of a submission whose reply was lost, rollback and verification as a retune);
- the interval of each job is kept: the retunes are to the interval the job had.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from chronos.errors import ChronosError, FlinkRequestFailed
from chronos.model import ClusterShape, ReconfigurePlan
from chronos.tune.journal import Journal, Retune
from chronos.tune.retune import RetuneOutcome, Retuner, TunedJob


class ClusterRestarter(Protocol):
    def in_force(self) -> ClusterShape: ...
    def restart(self, shape: ClusterShape) -> None: ...


class PlanStore(Protocol):
    """Where the plan is written ahead (a file beside the stack's state)."""

    def load(self) -> ReconfigurePlan | None: ...
    def save(self, plan: ReconfigurePlan) -> None: ...
    def clear(self) -> None: ...


@dataclass(frozen=True)
class ReconfigureOutcome:
    shape: ClusterShape
    restarted: bool
    jobs: tuple[RetuneOutcome, ...]


EXPLANATION = "cluster reconfiguration (recovery settings)"


class ClusterReconfigurer:
    def __init__(self, retuner: Retuner, journal: Journal, restarter: ClusterRestarter, plans: PlanStore,
                 jobs_by_id: Callable[[str], TunedJob | None], say: Callable[[str], None] = lambda _: None) -> None:
        self._retuner, self._journal, self._restarter, self._plans = retuner, journal, restarter, plans
        self._job_of = jobs_by_id
        self._say = say

    def pending(self) -> ReconfigurePlan | None:
        return self._plans.load()

    def reconfigure(self, target: ClusterShape, running: Sequence[TunedJob]) -> ReconfigureOutcome:
        if self._plans.load() is not None:
            raise FlinkRequestFailed("an interrupted reconfiguration is on record: finish it first "
                                     "(`chronos stack reconfigure --resume`)")
        self._plans.save(ReconfigurePlan(target, tuple(job.job_id for job in running)))  # written ahead
        return self._carry_out(self._plans.load() or ReconfigurePlan(target, ()))

    def resume(self) -> ReconfigureOutcome | None:
        plan = self._plans.load()
        return None if plan is None else self._carry_out(plan)

    def _carry_out(self, plan: ReconfigurePlan) -> ReconfigureOutcome:
        jobs = {jid: job for jid in plan.job_ids if (job := self._job_of(jid)) is not None}
        missing = [jid for jid in plan.job_ids if jid not in jobs]
        if missing:
            raise FlinkRequestFailed(f"the reconfiguration on record names job(s) {', '.join(missing)} whose spec "
                                     "is unknown here")
        restarted = False
        entries: list[Retune] = []
        if self._restarter.in_force() != plan.target:
            for jid, job in jobs.items():
                entry = self._unfinished(job, jid)
                if entry is not None:
                    entry = self._retuner.settle_stop(entry)  # a stop the last call was in the middle of
                if entry is None or entry.step == "abandoned":  # abandoned here: the stop never happened
                    self._say(f"stopping {job.spec.name} ({jid}) with a savepoint")
                    entry = self._retuner.stop(job, job.settings.interval_ms, EXPLANATION)
                if entry.step == "abandoned":
                    self._call_off(entries, jobs)
                    raise FlinkRequestFailed(f"could not stop {job.spec.name} ({jid}) with a savepoint: "
                                             f"{entry.note}; the cluster is unchanged and every job runs on")
                entries.append(entry)
            self._say("restarting the cluster with " + ("; ".join(plan.target.lines()) or "Flink's defaults"))
            self._restarter.restart(plan.target)
            restarted = True
        else:
            entries = [entry for jid, job in jobs.items() if (entry := self._unfinished(job, jid)) is not None]
        outcomes = self._resubmit(entries, jobs)
        self._plans.clear()
        return ReconfigureOutcome(plan.target, restarted, tuple(outcomes))

    def _unfinished(self, job: TunedJob, job_id: str) -> Retune | None:
        entry = self._journal.unfinished(job.spec.name)
        return entry if entry is not None and entry.old_job_id == job_id else None

    def _resubmit(self, entries: list[Retune], jobs: dict[str, TunedJob]) -> list[RetuneOutcome]:
        outcomes = []
        for entry in entries:
            job = jobs[entry.old_job_id]
            self._say(f"resubmitting {job.spec.name} from {entry.savepoint}")
            outcomes.append(self._retuner.resume(entry, job))
        return outcomes

    def _call_off(self, entries: list[Retune], jobs: dict[str, TunedJob]) -> None:
        try:
            self._resubmit(entries, jobs)
        except ChronosError as exc:  # the plan stays: the next call finishes them
            raise FlinkRequestFailed(f"calling the reconfiguration off, a stopped job could not be resubmitted "
                                     f"({exc}); its savepoint is journaled: run `chronos stack reconfigure "
                                     "--resume`") from exc
        self._plans.clear()
