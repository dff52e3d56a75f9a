"""The input rate a reading carries is the input's end offsets' growth over the rate window (10 s), not over one
collect period: the producer sends in batches and a starved broker answers late, so end offsets read 2 s apart
swing far around the true rate, and the tuner keeps the highest reading it saw as the fallback's ceiling."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.signals.tune_signals import KafkaJobCollector
from tests.support.clocks import Clock
from tests.unit.test_collector_guards import JOB, Latency, Rest, Signals, collector


@dataclass
class BurstySignals(Signals):
    """End offsets as a batching producer leaves them: 16k ev/s on average, read 2 s apart as 0, 40k, 0, 24k ev/s."""

    bursts: list[int] = field(default_factory=lambda: [0, 80_000, 0, 48_000])
    calls_made: int = 0

    def end_offset(self) -> int:
        self._call("kafka")
        self.end += self.bursts[self.calls_made % len(self.bursts)]
        self.calls_made += 1
        return self.end


def rates(c: KafkaJobCollector, clock: Clock, seconds: int, every: float = 2.0) -> list[float | None]:
    out = []
    for _ in range(int(seconds / every)):
        clock.now += every
        out.append(c.collect(JOB).input_rate)
    return out


def test_a_bursty_input_reads_as_its_mean_rate_once_the_window_has_filled() -> None:
    clock = Clock()
    c = collector(BurstySignals(), clock)
    seen = rates(c, clock, 60)
    assert seen[0] is None  # one end offset is no rate
    settled = [r for r in seen[6:] if r is not None]
    assert settled and all(11_200 <= r <= 20_800 for r in settled)  # within 30 % of 16k ev/s, where 2 s read 0-40k


def test_one_collect_period_alone_would_have_swung_from_nothing_to_past_capacity() -> None:
    clock = Clock()
    c = KafkaJobCollector(BurstySignals(), Rest(BurstySignals()), 60, Latency(), clock=clock,
                          wall_ms=lambda: int(clock.now * 1000), rate_window_s=0.0)
    seen = [r for r in rates(c, clock, 20) if r is not None]
    assert min(seen) == 0 and max(seen) == 40_000  # what the ceiling rule would have kept


def test_a_load_step_is_read_in_full_within_the_window_and_one_period() -> None:
    clock, signals = Clock(), BurstySignals(bursts=[2_000])  # 1k ev/s steady
    c = collector(signals, clock)
    rates(c, clock, 30)
    signals.bursts = [10_000]  # 5k ev/s from now on
    after = rates(c, clock, 12)
    assert after[-1] == 5_000


def test_a_recreated_topic_starts_the_window_afresh_instead_of_reading_a_negative_rate() -> None:
    clock, signals = Clock(), BurstySignals(bursts=[2_000])
    c = collector(signals, clock)
    rates(c, clock, 20)
    signals.end = 0
    assert rates(c, clock, 2) == [None]
    assert rates(c, clock, 2) == [1_000]
