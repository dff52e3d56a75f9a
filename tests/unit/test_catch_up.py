"""What explains a recovery's catch-up, read off the samples after the job runs again: the backlog it restarted
with, the input rate, the throughput it drained at (its capacity) and how fast the backlog shrank."""

from __future__ import annotations

from chronos.chaos.catch_up import explain_catch_up
from chronos.model import SignalSample


def test_the_terms_of_the_catch_up_law_are_read_off_the_drain() -> None:
    # restart at t=10 s with 6,000 records behind; input 1,000/s; the job runs flat out at 3,000/s: 2,000/s drained
    samples = [SignalSample(5_000, False, None, 4_000.0, None, 1_000.0)]
    samples += [SignalSample(10_000 + 500 * i, True, 3_000.0, 6_000.0 - 1_000.0 * i, None, 1_000.0) for i in range(7)]
    samples += [SignalSample(14_000, True, 1_000.0, 0.0, None, 1_000.0)]
    catch_up = explain_catch_up(samples, running_ms=10_000, recovered_ms=13_000)
    assert (catch_up.backlog, catch_up.input_rate, catch_up.capacity) == (6_000.0, 1_000.0, 3_000.0)
    assert catch_up.drain_rate == 2_000.0
    assert catch_up.predicted_s == 3.0, "backlog / (capacity - input): the phase model's catch-up"


def test_a_job_that_never_ran_again_or_never_outran_its_input_explains_nothing_it_cannot() -> None:
    assert explain_catch_up([], None, None).backlog is None
    stuck = [SignalSample(1_000 * i, True, 900.0, 5_000.0 + 100 * i, None, 1_000.0) for i in range(4)]
    catch_up = explain_catch_up(stuck, running_ms=0, recovered_ms=None)
    assert catch_up.predicted_s is None and catch_up.drain_rate is not None and catch_up.drain_rate < 0
