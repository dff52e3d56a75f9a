"""A profiling run's sample when Kafka does not answer: two profiling copies beside a busy live job on two cores
starved the broker until an end-offsets request timed out (kafka-python's KafkaTimeoutError, later an empty broker
list), and that one missing reading ended four of five runs of a profile. It is a sample without a lag."""

from __future__ import annotations

from typing import Any

from chronos.errors import KafkaUnavailable
from chronos.flink.prometheus_scrape import CURRENT_OFFSET, PromSample
from chronos.signals.live import LiveSignals


class Silent:
    """An observer's consumer that never sees output."""

    def poll(self, timeout_ms: int = 0, max_records: int = 0) -> dict[str, list[Any]]:
        return {}

    def close(self) -> None:
        return None


class Ends:
    def __init__(self, answers: list[int | None]) -> None:
        self.answers = answers

    def total_end_offset(self) -> int:
        answer = self.answers.pop(0)
        if answer is None:
            raise KafkaUnavailable("no end offsets from Kafka (KafkaTimeoutError: Failed to get offsets by "
                                   "timestamps in 5000 ms)")
        return answer

    def close(self) -> None:
        return None


class Running(LiveSignals):
    """REST and the reporter answer; only Kafka is in question here."""

    offset = 1_000

    def running(self) -> bool:
        return True

    def reporter(self) -> list[PromSample]:
        return [PromSample(CURRENT_OFFSET, (("job_name", "job"), ("topic", "in"), ("partition", "0")), self.offset)]


def test_an_end_offsets_timeout_is_a_sample_without_a_lag_and_the_next_one_has_it_again() -> None:
    client: Any = None
    live = Running(client, "j", "job", "127.0.0.1:1", "in", "out", [], wall_ms=lambda: 1_000_000,
                   consumer_factory=lambda bootstrap, topic: Silent(), ends=Ends([None, 1_500]))
    try:
        missing = live.sample()
        assert missing.running and missing.lag is None
        assert live.sample().lag == 500.0
    finally:
        live.close()
