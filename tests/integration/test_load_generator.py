"""The load generator against the real broker: every event it reports sent is in the topic."""

from __future__ import annotations

import uuid
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from chronos.jobs.parallel_load import LoadPlan, run_parallel_load
from chronos.jobs.topics import ensure_topics
from chronos.rates import ConstantRate
from chronos.stack.state import StackState


def _events_in(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(partitions).values())
    finally:
        consumer.close()


def test_parallel_workers_deliver_exactly_the_requested_events(stack: StackState) -> None:
    topic = f"load-{uuid.uuid4().hex[:8]}"
    ensure_topics(stack.bootstrap, [topic], partitions=2)
    plan = LoadPlan(stack.bootstrap, topic, ConstantRate(6000), vehicles=100, count=20_000, workers=2)
    report = run_parallel_load(plan, close_windows=True)
    assert report.sent == 20_000
    assert sum(n for _, n in report.per_vehicle) == 20_000
    assert len(report.per_vehicle) == 100
    assert _events_in(stack.bootstrap, topic) == 20_000 + 2  # plus one window flush per partition


def test_cli_load_in_the_foreground_follows_sine_and_trace_profiles(stack: StackState, tmp_path: Path) -> None:
    from tests.cli.test_bad_input import chronos

    topic = f"cli-load-{uuid.uuid4().hex[:8]}"
    sine = chronos("load", "run", "--profile", "sine", "--rate", "1000", "--amplitude", "500", "--period", "4",
                   "--duration", "4", "--topic", topic, "--bootstrap", stack.bootstrap)
    assert sine.returncode == 0, sine.stderr
    assert "events/s achieved" in sine.stdout
    sent_sine = int(sine.stdout.split()[1].replace(",", ""))
    assert 3000 <= sent_sine <= 4400  # one full period of 1000 +- 500 events/s is 4000 events

    trace = tmp_path / "trace.csv"
    trace.write_text("seconds,events_per_second\n0,500\n2,1500\n")
    replay = chronos("load", "run", "--profile", "csv", "--trace", str(trace), "--count", "1500",
                     "--topic", topic, "--bootstrap", stack.bootstrap)
    assert replay.returncode == 0, replay.stderr
    assert _events_in(stack.bootstrap, topic) == sent_sine + 1500


def test_cli_shop_load_follows_a_trace_onto_both_of_its_topics(stack: StackState, tmp_path: Path) -> None:
    """The shop's generator under a trace (the side by side's own-job scenario swings its input like the demo's)."""
    from tests.cli.test_bad_input import chronos

    tag = uuid.uuid4().hex[:8]
    orders, payments = f"orders-{tag}", f"payments-{tag}"
    ensure_topics(stack.bootstrap, [orders, payments], partitions=2)
    trace = tmp_path / "shop.csv"
    trace.write_text("seconds,events_per_second\n0,200\n2,800\n")
    done = chronos("load", "shop", "--trace", str(trace), "--count", "1200", "--orders-topic", orders,
                   "--payments-topic", payments, "--bootstrap", stack.bootstrap)
    assert done.returncode == 0, done.stderr
    assert "records/s achieved" in done.stdout
    assert _events_in(stack.bootstrap, orders) + _events_in(stack.bootstrap, payments) == 1200
    assert _events_in(stack.bootstrap, payments) > 0
