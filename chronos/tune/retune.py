"""Realizing a retune: stop-with-savepoint, resubmit with the new interval, verify, journaled at every
step so that a tuner that dies anywhere can be finished by the next one.

The guarantees, and where each comes from:
- never left stopped: a journaled savepoint is always resubmitted, by this tuner or the next;
- never an older savepoint: the savepoint resubmitted is the one this very stop produced (or, after a
  crash between stop and journal, the one Flink itself records for the stopped job);
- never started twice: before every submission the cluster is asked for a live job of the same name
  started since the decision; if one exists (a submission whose reply was lost), it is adopted;
- a failed resubmission is retried, with growing, jittered delays (a REST blip of a few seconds does not use
  up every attempt), then the previous interval is resubmitted from the same savepoint: the journal's step
  says so (`rolling-back`), so a tuner that dies on the way back goes on back, not forward;
- never a new interval unverified: a retune is `verified` only when Flink reports the new interval in force.

Two callers, one path: `chronos tune` (a decision) and `chronos job retune` (a person), so a manual retune has
the same crash safety, rollback and verification as the tuner's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from chronos.backoff import Backoff
from chronos.clock import wall_ms
from chronos.errors import ChronosError, FlinkRequestFailed
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobSpec, format_interval
from chronos.tune.journal import TO_SUBMIT, Journal, Retune, Step

SUBMIT_RETRY = Backoff(first_s=2.0, factor=2.0, max_s=30.0)  # 2, 4, 8 s (jittered) between resubmissions


class JobControl(Protocol):
    def state(self, job_id: str) -> str: ...
    def stop_with_savepoint(self, job_id: str) -> str: ...
    def savepoint_of(self, job_id: str) -> str | None:
        """The newest savepoint Flink records for the job (None if it has none)."""
        ...
    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str) -> str: ...
    def wait_until_running(self, job_id: str, timeout_s: float) -> None: ...
    def interval_ms(self, job_id: str) -> int: ...
    def live_jobs(self, name: str) -> list[tuple[str, int]]:
        """(job id, start ms) of the jobs with this name that are not in a terminal state."""
        ...


@dataclass(frozen=True)
class TunedJob:
    job_id: str
    spec: JobSpec
    settings: CheckpointSettings  # as submitted: `interval_ms` is the job's own (a paced job's fallback)
    paced_ms: int | None = None  # the cadence chronos triggers its checkpoints at (None: not paced)

    @property
    def effective_ms(self) -> int:
        return self.paced_ms or self.settings.interval_ms


@dataclass(frozen=True)
class RetuneOutcome:
    entry: Retune
    job: TunedJob  # the job running now
    outcome: Literal["verified", "rolled-back", "abandoned"]
    downtime_s: float | None  # stop request (or resume) -> every task RUNNING
    savepoint_s: float | None = None  # stop request -> savepoint complete (None: not stopped by this call)
    submitted_s: float | None = None  # stop request (or resume) -> the new job's id returned


class Realizer(Protocol):
    """How a decided interval reaches the job: the local REST path (`Retuner`) or a Kubernetes
    FlinkDeployment patch (`chronos.k8s.flink_deployment.DeploymentRealizer`). Both journal every step;
    `resume` finishes (or rolls back, or abandons) what a predecessor left."""

    def retune(self, job: TunedJob, to_ms: int, explanation: str) -> RetuneOutcome: ...
    def resume(self, entry: Retune, job: TunedJob) -> RetuneOutcome: ...


def _noop(old: TunedJob, new: TunedJob, savepoint: str) -> None:
    return None


class Retuner:
    def __init__(
        self,
        control: JobControl,
        journal: Journal,
        *,
        wall_ms: Callable[[], int] = wall_ms,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        submit_attempts: int = 3,
        running_timeout_s: float = 180.0,
        settle_timeout_s: float = 20.0,
        on_replaced: Callable[[TunedJob, TunedJob, str], None] = _noop,
        retry: Backoff = SUBMIT_RETRY,
        rng: random.Random | None = None,
    ) -> None:
        self._retry = retry
        self._rng = rng or random.Random(0)
        self._control = control
        self._journal = journal
        self._wall_ms = wall_ms
        self._clock = clock
        self._sleep = sleep
        self._attempts = submit_attempts
        self._running_timeout_s = running_timeout_s
        self._settle_timeout_s = settle_timeout_s
        self._on_replaced = on_replaced

    def retune(self, job: TunedJob, to_ms: int, explanation: str) -> RetuneOutcome:
        start = self._clock()
        stopped = self.stop(job, to_ms, explanation)
        if stopped.step == "abandoned":
            return RetuneOutcome(stopped, job, "abandoned", None)
        savepoint_s = self._clock() - start
        return replace(self._finish(stopped, job, start), savepoint_s=savepoint_s)

    def stop(self, job: TunedJob, to_ms: int, explanation: str) -> Retune:
        """The first half of a retune: journaled, stopped with a savepoint, the savepoint journaled (step
        `savepoint`), or `abandoned` if the stop failed and the job runs on. `resume` finishes it, later or
        elsewhere: a cluster restarted between the two halves (chronos.tune.cluster_reconfigure) is one such."""
        entry = self._journal.open_retune(job.spec.name, job.job_id, job.settings.interval_ms, to_ms,
                                          self._wall_ms(), explanation)
        try:
            savepoint = self._control.stop_with_savepoint(job.job_id)
        except ChronosError:
            if self._control.state(job.job_id) not in TERMINAL_STATES:
                return self._journal.advance(entry.retune_id, "abandoned", self._wall_ms(),
                                             note="the stop failed; the job kept running")
            savepoint = self._savepoint_of_stopped(job.job_id)
        return self._journal.advance(entry.retune_id, "savepoint", self._wall_ms(), savepoint=savepoint)

    def restart_stopped(self, job: TunedJob, to_ms: int, savepoint: str, explanation: str) -> RetuneOutcome:
        """A job already stopped with `savepoint` (by `chronos job stop`, or by hand) started again with `to_ms`:
        journaled like any retune from its savepoint step on."""
        entry = self._journal.open_retune(job.spec.name, job.job_id, job.settings.interval_ms, to_ms,
                                          self._wall_ms(), explanation)
        entry = self._journal.advance(entry.retune_id, "savepoint", self._wall_ms(), savepoint=savepoint,
                                      note="the job was already stopped with this savepoint")
        return self._finish(entry, job, self._clock())

    def resume(self, entry: Retune, job: TunedJob) -> RetuneOutcome:
        """Finish (or roll back) a retune a previous tuner left unfinished. `job` is the job it retuned."""
        start = self._clock()
        entry = self.settle_stop(entry)
        if entry.step == "abandoned":
            return RetuneOutcome(entry, job, "abandoned", None)
        return self._finish(entry, job, start)

    def settle_stop(self, entry: Retune) -> Retune:
        """A retune left at `decided` (its tuner died during the stop) brought to `savepoint` with the savepoint
        Flink records for the stopped job, or `abandoned` if the job still runs; any other step as it is."""
        if entry.step != "decided":
            return entry
        if self._settled_state(entry.old_job_id) not in TERMINAL_STATES:
            return self._journal.advance(entry.retune_id, "abandoned", self._wall_ms(),
                                         note="found the job still running: the stop never happened")
        return self._journal.advance(entry.retune_id, "savepoint", self._wall_ms(),
                                     savepoint=self._savepoint_of_stopped(entry.old_job_id))

    # -- steps ------------------------------------------------------------------------------------
    def _settled_state(self, job_id: str) -> str:
        """A stop in flight when the last tuner died finishes on its own: wait for it briefly."""
        deadline = self._clock() + self._settle_timeout_s
        state = self._control.state(job_id)
        while state not in TERMINAL_STATES and self._clock() < deadline:
            self._sleep(0.5)
            state = self._control.state(job_id)
        return state

    def _savepoint_of_stopped(self, job_id: str) -> str:
        savepoint = self._control.savepoint_of(job_id)
        if savepoint is None:
            raise FlinkRequestFailed(f"job {job_id} is stopped and Flink records no savepoint of it; "
                                     "restore it by hand from its last checkpoint")
        return savepoint

    def _adoptable(self, entry: Retune) -> str | None:
        live = [(jid, started) for jid, started in self._control.live_jobs(entry.job_name)
                if jid != entry.old_job_id and started >= entry.decided_ms]
        return max(live, key=lambda j: j[1])[0] if live else None

    def _submit(self, entry: Retune, job: TunedJob) -> Retune:
        """From a savepoint step to a resubmitted one: the new interval up to `attempts` times, then the previous
        one (the step turns to `rolling-back` first, so a crash in between goes on back)."""
        savepoint = entry.savepoint
        assert savepoint is not None
        failures: list[str] = []
        forward = 0 if entry.rolling_back else self._attempts
        for attempt in range(forward + self._attempts):
            if attempt == forward and not entry.rolling_back:
                entry = self._journal.advance(entry.retune_id, "rolling-back", self._wall_ms(),
                                              note=f"{forward} submissions failed; back to the previous interval")
            if attempt:
                self._sleep(self._retry.delay(attempt, self._rng))
            done: Step = "rollback-resubmitted" if entry.rolling_back else "resubmitted"
            adopted = self._adoptable(entry)
            if adopted is not None:
                return self._journal.advance(entry.retune_id, done, self._wall_ms(), new_job_id=adopted,
                                             note=f"adopted {adopted}, submitted before a crash")
            settings = replace(job.settings, interval_ms=entry.interval_to_submit_ms)
            try:
                new_job = self._control.submit(job.spec, settings, savepoint)
            except ChronosError as exc:
                failures.append(str(exc))
                waiting: Step = "rolling-back" if entry.rolling_back else "savepoint"
                entry = self._journal.advance(entry.retune_id, waiting, self._wall_ms(), attempted=True,
                                              note=f"submission failed: {exc}"[:500])
                continue
            return self._journal.advance(entry.retune_id, done, self._wall_ms(), new_job_id=new_job, attempted=True)
        raise FlinkRequestFailed(f"could not resubmit {entry.job_name} from {entry.savepoint} "
                                 f"({len(failures)} attempts; last: {failures[-1] if failures else '?'}); "
                                 "the savepoint is journaled: run `chronos tune` again to retry")

    def _finish(self, entry: Retune, job: TunedJob, start: float) -> RetuneOutcome:
        submitted_s = None
        for _ in range(self._attempts + 2):
            if entry.step in TO_SUBMIT:
                entry = self._submit(entry, job)
                submitted_s = self._clock() - start
            new_job_id, savepoint = entry.new_job_id, entry.savepoint
            assert new_job_id is not None and savepoint is not None
            settings = replace(job.settings, interval_ms=entry.interval_to_submit_ms)
            try:
                self._control.wait_until_running(new_job_id, self._running_timeout_s)
            except ChronosError as exc:
                if self._control.state(new_job_id) not in TERMINAL_STATES:
                    raise
                # It died on restore: back to the savepoint, and from it with the previous interval.
                entry = self._journal.advance(entry.retune_id, "rolling-back", self._wall_ms(),
                                              note=f"{new_job_id} failed on restore ({exc})"[:500])
                continue
            downtime = self._clock() - start
            in_force = self._control.interval_ms(new_job_id)
            step: Literal["verified", "rolled-back"] = "rolled-back" if entry.rolling_back else "verified"
            if in_force != settings.interval_ms:
                raise FlinkRequestFailed(f"job {new_job_id} runs with interval {format_interval(in_force)}, "
                                         f"not the {format_interval(settings.interval_ms)} submitted")
            entry = self._journal.advance(entry.retune_id, step, self._wall_ms(), downtime_s=downtime)
            new = TunedJob(new_job_id, job.spec, settings)
            self._on_replaced(job, new, savepoint)
            return RetuneOutcome(entry, new, step, downtime, submitted_s=submitted_s)
        raise FlinkRequestFailed(f"retune {entry.retune_id} of {entry.job_name} kept failing; "
                                 f"its savepoint {entry.savepoint} is journaled")
