"""The live job's output observer over a consumer that fails (a fake of the consumer the observer owns):
a poll error ends its thread, is said once, and the thread is started again with a new consumer; the
latencies it keeps reach back only as far as the tuner's window, and "worst since the last call" is one
value, not a list that grows while nobody asks."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chronos.signals.live import LiveSignals


@dataclass
class Wall:
    now_ms: int = 1_000_000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> int:
        with self.lock:
            return self.now_ms


@dataclass
class Message:
    value: bytes


@dataclass
class Consumer:
    """A consumer whose first `fail_polls` polls raise (a broker gone too long), then yields `batches`."""

    batches: list[list[int]]  # created_ms of each record, per poll
    fail: bool = False
    closed: bool = False
    polls_after_close: int = 0
    wall: Wall | None = None  # advanced by `step_ms` before each batch is returned
    step_ms: int = 0
    # Polls after the last batch: the observer polls again only once it has handled what the last poll gave it.
    idle_polls: int = 0

    def poll(self, timeout_ms: int) -> dict[str, list[Message]]:
        if self.closed:
            self.polls_after_close += 1
        if self.fail:
            raise OSError("KafkaConnectionError: broker gone")
        time.sleep(0.005)
        if not self.batches:
            self.idle_polls += 1
            return {}
        if self.wall is not None:
            with self.wall.lock:
                self.wall.now_ms += self.step_ms
        created = self.batches.pop(0)
        return {"p0": [Message(json.dumps({"max_created_ms": c}).encode()) for c in created]}

    def close(self) -> None:
        self.closed = True


@dataclass
class Consumers:
    made: list[Consumer] = field(default_factory=list)
    plans: list[Consumer] = field(default_factory=list)

    def __call__(self, bootstrap: str, topic: str) -> Consumer:
        consumer = self.plans.pop(0) if self.plans else Consumer([])
        self.made.append(consumer)
        return consumer


class Ends:
    def total_end_offset(self) -> int:
        return 0

    def close(self) -> None:
        return None


def signals(consumers: Consumers, wall: Wall, history_s: float | None = None) -> LiveSignals:
    client: Any = None  # REST is not read by the observer
    return LiveSignals(client, "j", "job", "127.0.0.1:1", "in", "out", [], wall_ms=wall,
                       consumer_factory=consumers, history_s=history_s, ends=Ends())


def wait_for(condition: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_poll_error_is_said_once_and_the_observer_starts_again_with_a_new_consumer() -> None:
    consumers = Consumers(plans=[Consumer([], fail=True), Consumer([[999_000]])])
    live = signals(consumers, Wall())
    try:
        wait_for(lambda: not live._observer.is_alive())
        assert consumers.made[0].closed, "the dead thread closed the consumer it owned"
        error = live.observer_failure()
        assert error is not None and "broker gone" in error
        assert live.observer_failure() is None, "said once; the new observer is alive"
        wait_for(lambda: live.latencies_between(0, 2_000_000) == [1000.0])
        assert len(consumers.made) == 2
    finally:
        live.close()
    assert all(c.closed and c.polls_after_close == 0 for c in consumers.made), "never closed under a live poll"


def test_the_tuner_keeps_latencies_for_its_window_only() -> None:
    wall = Wall()
    stream = Consumer([[wall.now_ms - 500] * 10 for _ in range(200)], wall=wall, step_ms=10_000)
    live = signals(Consumers(plans=[stream]), wall, history_s=60)  # ten latencies per 10 s, for 2,000 s
    try:
        wait_for(lambda: stream.idle_polls > 0)
        kept = live.latencies_between(0, wall.now_ms + 1)
        assert len(kept) == 10 * 7, "the batches of the last 60 s, both ends included; 2,000 in all came"
    finally:
        live.close()


def test_the_worst_recent_latency_is_the_worst_since_the_last_call() -> None:
    wall = Wall()
    consumers = Consumers(plans=[Consumer([[wall.now_ms - 300, wall.now_ms - 900], [wall.now_ms - 100]])])
    live = signals(consumers, wall)
    try:
        wait_for(lambda: consumers.made[0].idle_polls > 0)
        assert live.worst_recent_latency() == 900.0
        assert live.worst_recent_latency() is None, "nothing became visible since"
    finally:
        live.close()
