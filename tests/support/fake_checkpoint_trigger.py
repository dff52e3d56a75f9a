"""A paced job on a fake clock, for the pacer's unit tests: the CheckpointTrigger port's fake, held to the same
contract as the real one (tests/contracts/test_checkpoint_trigger_contract.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.errors import FlinkRequestFailed, FlinkUnreachable
from chronos.tune.pacer import TriggerOutcome
from chronos.tune.pacing import PacingView


@dataclass
class FakeJob:
    """A job on a fake clock: a trigger starts a checkpoint that completes `duration_ms` later."""

    now: int = 0
    duration_ms: int = 200
    running: bool = True
    refuse: bool = False
    never_complete: bool = False
    periodic_in_flight: bool = False
    completed: list[tuple[int, int]] = field(default_factory=lambda: [(1, 0)])  # (id, trigger ms)
    triggers: list[int] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)  # trigger id -> trigger ms
    done: dict[str, int] = field(default_factory=dict)  # trigger id -> its checkpoint's id
    unreachable: bool = False

    def _settle(self) -> None:
        for trigger_id, at in list(self.in_flight.items()):
            if not self.never_complete and self.now >= at + self.duration_ms:
                del self.in_flight[trigger_id]
                self.completed.append((self.completed[-1][0] + 1, at))
                self.done[trigger_id] = self.completed[-1][0]

    def pacing_view(self, job_id: str) -> PacingView:
        if self.unreachable:
            raise FlinkUnreachable("cannot reach the Flink REST API at http://flink.test (ConnectError)")
        self._settle()
        last_id, last_ms = self.completed[-1]
        return PacingView(self.now, self.running, len(self.in_flight) + self.periodic_in_flight, last_id, last_ms)

    def trigger_checkpoint(self, job_id: str) -> str:
        self.triggers.append(self.now)
        if self.refuse:
            raise FlinkRequestFailed("Flink refused POST /jobs/j1/checkpoints: not all tasks running")
        trigger_id = f"{len(self.triggers):032x}"
        self.in_flight[trigger_id] = self.now
        return trigger_id

    def trigger_outcome(self, job_id: str, trigger_id: str) -> TriggerOutcome:
        self._settle()
        if trigger_id in self.in_flight:
            return TriggerOutcome("in-progress")
        if trigger_id not in self.done:
            return TriggerOutcome("failed", failure="Flink no longer knows this trigger")
        return TriggerOutcome("completed", checkpoint_id=self.done[trigger_id])

    def wait(self, seconds: float) -> None:
        self.now += int(seconds * 1000)
