"""What `chronos profile run` records of the live job before it profiles: the rate of its input (a workload trace)
or a sample of its input records, each over a window with a progress line."""

from __future__ import annotations

from rich.console import Console

from chronos.connection_security import KafkaSecurity
from chronos.errors import InvalidInput
from chronos.profiler.input_sample import InputSample
from chronos.rates import TraceRate
from chronos.stack.job_records import JobRecord
from chronos.stack.known_jobs import job_io
from chronos.stack.state import StackState


def record_workload(state: StackState, record: JobRecord, window_s: float, console: Console) -> TraceRate:
    """The live job's input rate over `window_s`, read off its input topic's end offsets."""
    from chronos.cli import wiring
    from chronos.profiler.workload import record_trace

    io = job_io(record)
    topics = io.input_topics
    topic = ", ".join(topics)
    reader = wiring.topic_end_offsets(state.bootstrap, topics, io.kafka if io.bootstrap == state.bootstrap
                                      else state.kafka_client)
    try:
        with console.status(f"recording the workload of {topic} for {window_s:g} s") as status:
            trace = record_trace(reader, window_s, every_s=min(5.0, window_s),
                                 on_point=lambda t, r: status.update(f"recording {topic}: {t:.0f} s, {r:,.0f} events/s"))
    finally:
        reader.close()
    if not any(trace.rates):
        raise InvalidInput(f"the input topic {topic} carried no events during the {window_s:g} s recording; "
                           "give --trace FILE or --rate EVENTS_PER_S")
    return trace


def record_input(state: StackState, topics: tuple[str, ...], window_s: float, seed: int, console: Console,
                 kafka: KafkaSecurity) -> InputSample:
    """A sample of the live input topics' records over `window_s` (read-only, group-less) with their rate."""
    from chronos.cli import wiring
    from chronos.profiler.input_sample import record_sample

    names = ", ".join(topics)
    reader = wiring.topic_recorder(state.bootstrap, topics, kafka)
    try:
        with console.status(f"recording the input of {names} for {window_s:g} s") as status:
            return record_sample(reader, topics, window_s, every_s=min(5.0, window_s), seed=seed,
                                 on_point=lambda t, r, n: status.update(
                                     f"recording {names}: {t:.0f} s, {r:,.0f} records/s, {n:,} read"))
    finally:
        reader.close()
