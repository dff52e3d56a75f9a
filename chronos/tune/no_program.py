"""The restart side of a job chronos has no program of (submitted elsewhere, no job file adopted).

Pacing needs only the job's id, a restart needs what to resubmit: such a job is tuned with restart retunes off (its
policy's hourly cap at 0, so the decision core holds every fallback change and says why), and this Realizer stands
behind the paced realization for the restart it is never asked for. Asked anyway (a retune of the same job id
journaled by an earlier tuner), it refuses in one line rather than guess a program."""

from __future__ import annotations

from chronos.errors import InvalidInput
from chronos.tune.journal import Retune
from chronos.tune.retune import RetuneOutcome, TunedJob

ADOPT_HINT = "chronos job adopt {job_id} --file job.yaml"


class NoProgram:
    def retune(self, job: TunedJob, to_ms: int, explanation: str) -> RetuneOutcome:
        raise InvalidInput(f"job {job.job_id} cannot be restarted at {to_ms / 1000:g} s: chronos has no program of it to "
                           f"resubmit; adopt it with its job file (`{ADOPT_HINT.format(job_id=job.job_id)}`)")

    def resume(self, entry: Retune, job: TunedJob) -> RetuneOutcome:
        raise InvalidInput(f"an unfinished retune of job {entry.old_job_id} is journaled, but chronos has no program of "
                           f"it to finish it with; adopt it with its job file "
                           f"(`{ADOPT_HINT.format(job_id=entry.old_job_id)}`) and run `chronos tune` again")
