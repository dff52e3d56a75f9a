"""What the tuner reads off the live job each period: one frozen value, whatever the sources were."""

from __future__ import annotations

from dataclasses import dataclass

from chronos.model import SignalSample, SourceFailure

# What a decision cannot do without: the job's state and checkpoints (REST) and the input rate (Kafka).
NEEDED_FOR_DECISIONS = ("flink-rest", "kafka", "collector")
# What failure watching cannot do without: whether the job runs, from REST.
NEEDED_FOR_FAILURES = ("flink-rest", "collector")


@dataclass(frozen=True)
class LiveReading:
    at_ms: int
    running: bool  # every task RUNNING
    interval_ms: int | None  # checkpoint interval in force (REST); None if unreadable
    input_rate: float | None  # events/s arriving on the input, from its end offsets
    throughput: float | None  # events/s the sources read
    lag: float | None  # records not yet read
    p99_ms: float | None  # end-to-end p99 over the policy's latency window
    recent_p99_ms: float | None  # p99 of the output that became visible since the last reading
    checkpoint_costs_s: tuple[float, ...] = ()  # recent completed checkpoint durations
    last_failure_ms: int | None = None  # newest entry of the job's exception history
    output_staleness_ms: float | None = None  # now minus the newest input time the visible output covers
    failures: tuple[SourceFailure, ...] = ()  # the sources that could not be read this time

    @classmethod
    def unreadable(cls, at_ms: int, failure: SourceFailure) -> LiveReading:
        """A reading of nothing: the collector itself failed."""
        return cls(at_ms, False, None, None, None, None, None, None, failures=(failure,))

    def missing(self, sources: tuple[str, ...]) -> tuple[str, ...]:
        """Which of `sources` this reading lacks."""
        return tuple(f.source for f in self.failures if f.source in sources)

    def sample(self) -> SignalSample:
        """The form chaos's recovery analysis reads."""
        return SignalSample(self.at_ms, self.running, self.throughput, self.lag, self.recent_p99_ms, self.input_rate)
