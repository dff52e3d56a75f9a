"""One job of a many-job controller: its own TuneLoop, and the answer to "is this job still there to tune?".

A job cancelled or finished from outside chronos reads as not running, which the loop alone would take for a
failure that never ends (a recovery violation growing for ever); the controller instead lets it go, said once.
Whether it ended is asked of Flink only when the reading says the job is not running, and never while a retune
of chronos's own is still to be finished (its stop-with-savepoint leaves the old job FINISHED on purpose).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from chronos.tune.loop import TuneLoop

TERMINAL = frozenset({"CANCELED", "FINISHED", "FAILED"})  # Flink's globally terminal job states


class JobState(Protocol):
    """The job's state as Flink says it (RUNNING, CANCELED, ...): FlinkRestClient's job(id).state."""

    def __call__(self, job_id: str, /) -> str: ...


@dataclass
class TunedMember:
    """`chronos.tune.controller.Member` over a TuneLoop; what the job's tuning started (its pacer, its collector) is
    closed by whoever built it."""

    name: str
    loop: TuneLoop
    job_state: JobState

    def start(self) -> None:
        self.loop.start()

    def step(self) -> None:
        self.loop.tick()

    def ended(self) -> str | None:
        reading = self.loop.state.last_reading
        if reading is None or reading.running or self.loop.retune_pending:
            return None
        job_id = self.loop.state.job.job_id
        try:
            state = self.job_state(job_id)
        except Exception:  # noqa: BLE001 - unknown is not ended: asked again next turn
            return None
        if state not in TERMINAL:
            return None
        return f"job {job_id} is {state}, not by chronos: let go (its entries stay in the journal)"

    def close(self) -> None:
        self.loop.finish()
