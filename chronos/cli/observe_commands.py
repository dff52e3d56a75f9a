"""`chronos observe`: the end-to-end latency observer of a job's committed output."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from chronos.cli.common import Bootstrap, StackDir, err, finite, out, say_stale
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.cli.graceful import graceful_stop
from chronos.errors import InvalidInput

observe_app = typer.Typer(help="The latency observer (committed output of a job: the demo's, or --job's).",
                          no_args_is_help=True)


@observe_app.command("run")
def observe_run(
    window: Annotated[float, typer.Option(parser=finite, help="Sliding window in seconds.")] = 30.0,
    duration: Annotated[float | None, typer.Option(parser=finite, help="Seconds to observe \\[default: until stopped].")] = None,
    job: Annotated[str | None, typer.Option("--job", help="Watch this job's output: topic, broker and timestamp "
                                                           "field from the job's record (a job file's, too).")] = None,
    topic: Annotated[str | None, typer.Option(help="Output topic [default: the --job's, else the demo's "
                                                   "vehicle-stats].")] = None,
    background: Annotated[bool, typer.Option(help="Run as a stack-managed background process.")] = False,
    stack_dir: StackDir = None,
    bootstrap: Bootstrap = None,
) -> None:
    """Report end-to-end latency percentiles and throughput of the committed output."""
    from chronos.cli import wiring
    from chronos.jobs.latency import LatencySnapshot, LatencyWindow
    from chronos.jobs.observer import observe, write_snapshot
    from chronos.jobs.output import committed_consumer
    from chronos.stack.helpers import helper_dir, start_helper
    from chronos.stack.known_jobs import job_io

    if window <= 0:
        raise InvalidInput("--window must be positive")
    sd = _stack_dir(stack_dir)
    timestamp_field = "max_created_ms"
    kafka = None
    if job is not None:
        record = wiring.job_records(sd).get(job)
        if record is None:
            raise InvalidInput(f"job {job} was not submitted or adopted by chronos here: its output is unknown")
        io = job_io(record)
        topic, timestamp_field = topic or io.output_topic, io.timestamp_field
        bootstrap = bootstrap or io.bootstrap
        kafka = io.kafka if bootstrap == io.bootstrap else None
    topic = topic or "vehicle-stats"
    servers = wiring.bootstrap(sd, bootstrap)
    if background:
        wiring.require_stack(sd)
        pid = start_helper(sd, "observe", ["observe", "run", "--window", str(window), "--topic", topic,
                                           *(["--job", job] if job else []),
                                           "--bootstrap", servers, "--stack-dir", str(sd)])
        out.print(f"latency observer running in the background (pid {pid}); stop it with `chronos observe stop`")
        return
    snapshot_file = helper_dir(sd) / "latency.json"
    snapshot_file.parent.mkdir(parents=True, exist_ok=True)
    def show(s: LatencySnapshot) -> None:
        write_snapshot(snapshot_file, s, time.time())
        p99 = f"{s.p99_ms:8.0f}" if s.p99_ms is not None else "       -"
        p50 = f"{s.p50_ms:8.0f}" if s.p50_ms is not None else "       -"
        err.print(f"records {s.records:6d}  events/s {s.events_per_s:9.0f}  p50 {p50} ms  p99 {p99} ms")

    consumer = committed_consumer(servers, topic, from_beginning=False,
                                  security=kafka or wiring.kafka_security(sd, servers))
    try:
        with graceful_stop(second_aborts=False, abort_after_s=2.0) as stop:  # reads only: safe to cut
            observe(consumer, LatencyWindow(window), show, duration_s=duration, should_stop=stop.is_set,
                    timestamp_field=timestamp_field)
    finally:
        consumer.close()


@observe_app.command("stop")
def observe_stop(stack_dir: StackDir = None) -> None:
    """Stop the background latency observer."""
    from chronos.stack.helpers import stop_helper

    stopped = stop_helper(_stack_dir(stack_dir), "observe", say_stale)
    out.print("stopped the observer" if stopped else "no observer was running")
