"""A simulated job and clock that a chaos measurement runs against."""

from __future__ import annotations

from chronos.model import CheckpointEvent, CheckpointHistory, FaultRecord, SignalSample


class World:
    """A job checkpointing every 10 s from t=0, consuming 1000 records/s; a fault takes it down for
    4 s, then it catches up for 10 s."""

    def __init__(self, unseen_restart: bool = False) -> None:
        self.now_ms = 100_000
        self.interval_ms = 10_000  # a paced job's cadence, once paced
        self.fault_ms: int | None = None
        self.rolled_back = 0
        self.unseen_restart = unseen_restart  # down for less than a sample: only Flink's exception history saw it

    def wall_ms(self) -> int:
        self.now_ms += 1  # busy waits must make progress
        return self.now_ms

    def sleep(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)

    # SignalSource
    def sample(self) -> SignalSample:
        t = self.now_ms
        if self.fault_ms is None or t < self.fault_ms:
            return SignalSample(t, True, 1000.0 + (t % 3), 200.0 + (t % 5), 3000.0)
        since = t - self.fault_ms
        if 1000 <= since < 5000:
            return SignalSample(t, True, 0.0, 4000.0, None) if self.unseen_restart else SignalSample(t, False)
        if since < 15_000:
            return SignalSample(t, True, 4000.0, 20_000.0, 20_000.0)
        return SignalSample(t, True, 1000.0, 200.0, 3000.0)

    def checkpoint_history(self) -> CheckpointHistory:
        triggers = range(0, self.now_ms - 500, self.interval_ms)
        return CheckpointHistory(self.interval_ms, tuple(CheckpointEvent(i, t, t + 300, 300) for i, t in enumerate(triggers)))

    def replay_now(self) -> int:
        return self.now_ms - max(range(0, self.now_ms - 300, self.interval_ms))  # one record per ms since the last checkpoint

    def restored_checkpoint_id(self) -> int:
        return 7

    def failed_since(self, since_ms: int) -> int | None:
        failed = None if self.fault_ms is None else self.fault_ms + 1000
        return failed if failed is not None and failed >= since_ms and self.now_ms >= failed else None

    # FaultInjector
    def inject(self) -> FaultRecord:
        self.fault_ms = self.now_ms
        return FaultRecord("fake", "job", self.now_ms, 0.0)

    def rollback(self) -> None:
        self.rolled_back += 1
