"""What the tuner reads off the live job each period: one frozen value, whatever the sources were."""

from __future__ import annotations

from dataclasses import dataclass

from chronos.model import SignalSample


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

    def sample(self) -> SignalSample:
        """The form chaos's recovery analysis reads."""
        return SignalSample(self.at_ms, self.running, self.throughput, self.lag, self.recent_p99_ms, self.input_rate)
