"""`chronos`: thin commands over the library; every known failure is one line on stderr, exit 1."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from chronos.cli.common import AsJson, Bootstrap, RestUrl, StackDir, err, finite, out, say_stale
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.cli.graceful import graceful_stop
from chronos.cli.job_commands import job_app
from chronos.cli.observability_commands import dashboards, prometheus_app, report
from chronos.cli.profile_commands import profile_app
from chronos.cli.rotating_output import redirect_if_asked
from chronos.cli.tune_commands import tune
from chronos.errors import ChronosError, InvalidInput, redact
from chronos.model import format_interval

DEBUG_ENV = "CHRONOS_DEBUG"
app = typer.Typer(
    help="chronos: keeps a Flink job's checkpoint interval right for its QoS targets.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
)
stack_app = typer.Typer(help="The local stack: real Kafka + Flink on 127.0.0.1.", no_args_is_help=True)
load_app = typer.Typer(help="The load generator (vehicle events into Kafka).", no_args_is_help=True)
observe_app = typer.Typer(help="The latency observer (committed output of the demo job).", no_args_is_help=True)
app.add_typer(stack_app, name="stack")
app.add_typer(load_app, name="load")
app.add_typer(observe_app, name="observe")
app.add_typer(job_app, name="job")
chaos_app = typer.Typer(help="Break a job on purpose and measure its recovery.", no_args_is_help=True)
app.add_typer(chaos_app, name="chaos")
app.add_typer(profile_app, name="profile")
app.command("tune")(tune)
app.add_typer(prometheus_app, name="prometheus")
app.command("dashboards")(dashboards)
app.command("report")(report)

# -- stack ---------------------------------------------------------------------------------------
@stack_app.command("up")
def stack_up(
    stack_dir: StackDir = None,
    slots: Annotated[int, typer.Option(help="Task slots of the TaskManager.")] = 4,
    kafka_port: Annotated[int, typer.Option(help="Kafka port (0 = a free one).")] = 0,
    rest_port: Annotated[int, typer.Option(help="Flink REST port (0 = a free one).")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(envvar="CHRONOS_CACHE_DIR", help="Maven artifact cache.")] = None,
    as_json: AsJson = False,
) -> None:
    """Start Kafka (KRaft) and a Flink session cluster; report the running stack if already up."""
    from chronos.cli.wiring import default_cache_dir
    from chronos.stack.local_stack import StackOptions, up

    options = StackOptions(_stack_dir(stack_dir), (cache_dir or default_cache_dir()).expanduser(),
                           slots=slots, kafka_port=kafka_port, rest_port=rest_port)
    start = time.monotonic()
    with err.status("starting the stack") as spinner:
        def report(step: str) -> None:
            err.print(f"[dim]{time.monotonic() - start:5.1f} s[/] {step}", highlight=False)
            spinner.update(step)

        state, started = up(options, report=report)
    if as_json:
        _print_json({"started": started, "seconds": round(time.monotonic() - start, 1), **state.model_dump()})
        return
    verb = f"started in {time.monotonic() - start:.1f} s" if started else "already running"
    out.print(f"[bold green]stack {verb}[/] ({state.stack_dir})")
    out.print(f"  Flink UI/REST  {state.rest_url}")
    out.print(f"  Kafka          {state.bootstrap}")
    base = state.prometheus_port_base
    out.print(f"  Prometheus     http://127.0.0.1:{base}-{base + 3}/metrics  (the reporter binds all interfaces)")


@stack_app.command("fetch")
def stack_fetch(
    cache_dir: Annotated[Path | None, typer.Option(envvar="CHRONOS_CACHE_DIR", help="Maven artifact cache.")] = None,
) -> None:
    """Fetch (once) the Kafka broker and Flink Kafka connector jars from Maven Central."""
    from chronos.cli.wiring import default_cache_dir
    from chronos.stack.artifacts import ensure_artifacts

    with err.status("fetching Maven artifacts (cached after the first time)"):
        artifacts = ensure_artifacts((cache_dir or default_cache_dir()).expanduser())
    out.print(f"Kafka broker jars: {artifacts.kafka_lib}")
    out.print(f"Flink Kafka connector: {artifacts.connector_jar}")


@stack_app.command("down")
def stack_down(
    stack_dir: StackDir = None,
    purge: Annotated[bool, typer.Option(help="Also delete the services' data (topics, checkpoints, logs) where it "
                                             "lives apart from the stack dir (as root: the service user's).")] = False,
) -> None:
    """Stop every process of the stack (gracefully, then forcefully), and its Prometheus. Safe to repeat."""
    from chronos.stack.local_stack import down
    from chronos.stack.prometheus_server import stop_local_prometheus

    with err.status("stopping the stack"):
        prometheus = stop_local_prometheus(_stack_dir(stack_dir), say_stale)
        result = down(_stack_dir(stack_dir), purge=purge)
    for line in result.stale:
        say_stale(line)
    stopped = [*result.stopped, *(["prometheus"] if prometheus else [])]
    out.print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@stack_app.command("status")
def stack_status(stack_dir: StackDir = None, as_json: AsJson = False) -> None:
    """Probe each process of the stack; exit 1 unless every part is healthy."""
    from chronos.stack.local_stack import status

    st = status(_stack_dir(stack_dir))
    for line in st.stale:
        say_stale(line)
    if as_json:
        _print_json({"health": st.health, "components": [asdict(c) for c in st.components],
                     "helpers": dict(st.helpers), "stale": list(st.stale),
                     "state": st.state.model_dump() if st.state else None})
    else:
        out.print(f"stack: [bold]{st.health}[/]")
        table = Table("part", "pid", "alive", "ready", "detail")
        for c in st.components:
            table.add_row(c.name, str(c.pid), "yes" if c.alive else "NO", "yes" if c.ready else "NO", c.detail)
        for name, pid in st.helpers:
            table.add_row(name, str(pid), "yes", "-", "background helper")
        if st.components or st.helpers:
            out.print(table)
    if st.health != "healthy":
        raise typer.Exit(1)


# -- load ----------------------------------------------------------------------------------------
def _profile(kind: str, rate: float, to: float | None, at: float, amplitude: float, period: float,
             trace: Path | None) -> Any:
    from chronos.jobs.rates import ConstantRate, SineRate, StepRate, load_trace

    if rate < 0:
        raise InvalidInput(f"invalid rate {rate}: it cannot be negative")
    if kind == "constant":
        return ConstantRate(rate)
    if kind == "step":
        if to is None:
            raise InvalidInput("--profile step needs --to (the rate after the step)")
        return StepRate(rate, to, at)
    if kind == "sine":
        if period <= 0:
            raise InvalidInput("--period must be positive")
        return SineRate(rate, amplitude, period)
    if kind == "csv":
        if trace is None:
            raise InvalidInput("--profile csv needs --trace FILE (rows: seconds,events_per_second)")
        return load_trace(trace)
    raise InvalidInput(f"unknown profile {kind!r}: choose constant, step, sine or csv")


@load_app.command("run")
def load_run(
    rate: Annotated[float, typer.Option(parser=finite, help="Events/s (the mean for sine, the start for step).")] = 1000.0,
    profile: Annotated[str, typer.Option(help="constant | step | sine | csv")] = "constant",
    to: Annotated[float | None, typer.Option(parser=finite, help="step: rate after the step.")] = None,
    at: Annotated[float, typer.Option(parser=finite, help="step: seconds until the step.")] = 60.0,
    amplitude: Annotated[float, typer.Option(parser=finite, help="sine: amplitude in events/s.")] = 0.0,
    period: Annotated[float, typer.Option(parser=finite, help="sine: period in seconds.")] = 600.0,
    trace: Annotated[Path | None, typer.Option(help="csv: file of seconds,events_per_second rows.")] = None,
    duration: Annotated[float | None, typer.Option(parser=finite, help="Seconds to run \\[default: until stopped].")] = None,
    count: Annotated[int | None, typer.Option(help="Stop after this many events.")] = None,
    vehicles: Annotated[int, typer.Option(help="Fleet size (keyed state grows with it).")] = 1000,
    workers: Annotated[int, typer.Option(help="Producer processes (one tops out near 8k events/s).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the fleet's random walk.")] = 0,
    topic: Annotated[str, typer.Option(help="Input topic.")] = "vehicle-events",
    close_windows: Annotated[bool, typer.Option(help="End with a watermark flush so all windows close.")] = False,
    background: Annotated[bool, typer.Option(help="Run as a stack-managed background process.")] = False,
    stack_dir: StackDir = None,
    bootstrap: Bootstrap = None,
) -> None:
    """Produce vehicle events at a controlled rate and report the achieved rate."""
    from chronos.cli import wiring
    from chronos.jobs.fleet import VehicleFleet
    from chronos.jobs.loadgen import KafkaEventSink, LoadProgress, run_load
    from chronos.jobs.parallel_load import LoadPlan, run_parallel_load
    from chronos.stack.helpers import start_helper

    shape = _profile(profile, rate, to, at, amplitude, period, trace)
    if vehicles < 1:
        raise InvalidInput("--vehicles must be at least 1")
    if not 1 <= workers <= vehicles:
        raise InvalidInput("--workers must be between 1 and --vehicles")
    sd = _stack_dir(stack_dir)
    servers = wiring.bootstrap(sd, bootstrap)
    if background:
        wiring.require_stack(sd)
        args = ["load", "run", "--rate", str(rate), "--profile", profile, "--at", str(at),
                "--amplitude", str(amplitude), "--period", str(period), "--vehicles", str(vehicles),
                "--workers", str(workers), "--seed", str(seed), "--topic", topic, "--bootstrap", servers, "--stack-dir", str(sd)]
        for flag, value in (("--to", to), ("--trace", trace), ("--duration", duration), ("--count", count)):
            if value is not None:
                args += [flag, str(value)]
        if close_windows:
            args.append("--close-windows")
        pid = start_helper(sd, "load", args)
        out.print(f"load generator running in the background (pid {pid}); stop it with `chronos load stop`")
        return
    end = duration if duration is not None else (None if count is not None else float("inf"))
    run_id = f"s{seed}-{int(time.time())}"

    def progress(p: LoadProgress) -> None:
        err.print(f"{p.elapsed_s:7.1f} s  sent {p.sent:>10,}  target {p.target_rate:8.0f}/s  achieved {p.achieved_rate:8.0f}/s")

    with graceful_stop(second_aborts=False) as stop:
        if workers > 1:
            plan = LoadPlan(servers, topic, shape, vehicles, seed, run_id, end, count, workers)
            report = run_parallel_load(plan, on_progress=progress, should_stop=stop.is_set, close_windows=close_windows)
        else:
            sink = KafkaEventSink(servers, topic)
            try:
                report = run_load(sink, VehicleFleet(vehicles, seed=seed, run_id=run_id), shape, duration_s=end,
                                  max_events=count, on_progress=progress, should_stop=stop.is_set,
                                  close_windows=close_windows)
            finally:
                sink.close()
    out.print(f"sent {report.sent:,} events in {report.elapsed_s:.1f} s: {report.achieved_rate:,.0f} events/s achieved")


@load_app.command("stop")
def load_stop(stack_dir: StackDir = None) -> None:
    """Stop the background load generator."""
    from chronos.stack.helpers import stop_helper

    stopped = stop_helper(_stack_dir(stack_dir), "load", say_stale)
    out.print("stopped the load generator" if stopped else "no load generator was running")


# -- observe -------------------------------------------------------------------------------------
@observe_app.command("run")
def observe_run(
    window: Annotated[float, typer.Option(parser=finite, help="Sliding window in seconds.")] = 30.0,
    duration: Annotated[float | None, typer.Option(parser=finite, help="Seconds to observe \\[default: until stopped].")] = None,
    topic: Annotated[str, typer.Option(help="Output topic.")] = "vehicle-stats",
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

    if window <= 0:
        raise InvalidInput("--window must be positive")
    sd = _stack_dir(stack_dir)
    servers = wiring.bootstrap(sd, bootstrap)
    if background:
        wiring.require_stack(sd)
        pid = start_helper(sd, "observe", ["observe", "run", "--window", str(window), "--topic", topic,
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

    consumer = committed_consumer(servers, topic, from_beginning=False)
    try:
        with graceful_stop(second_aborts=False) as stop:
            observe(consumer, LatencyWindow(window), show, duration_s=duration, should_stop=stop.is_set)
    finally:
        consumer.close()


@observe_app.command("stop")
def observe_stop(stack_dir: StackDir = None) -> None:
    """Stop the background latency observer."""
    from chronos.stack.helpers import stop_helper

    stopped = stop_helper(_stack_dir(stack_dir), "observe", say_stale)
    out.print("stopped the observer" if stopped else "no observer was running")


# -- chaos ---------------------------------------------------------------------------------------
def _strategy(when: str, before: float, after: float, offset: float, mtbf: float, seed: int) -> Any:
    from chronos.chaos.timing import BestCase, FiringStrategy, FixedOffset, PoissonArrivals, WorstCase

    strategies: dict[str, Callable[[], FiringStrategy]] = {
        "worst-case": lambda: WorstCase(before), "best-case": lambda: BestCase(after),
        "now": lambda: FixedOffset(offset), "random": lambda: PoissonArrivals(mtbf, seed),
    }
    if when not in strategies:
        raise InvalidInput(f"unknown --when {when!r}: choose {', '.join(strategies)}")
    return strategies[when]()


@chaos_app.command("kill-taskmanager")
def chaos_kill_taskmanager(
    job: Annotated[str | None, typer.Option("--job", help="Job id \\[default: the one running job chronos submitted].")] = None,
    when: Annotated[str, typer.Option(help="worst-case | best-case | now | random")] = "worst-case",
    before: Annotated[float, typer.Option(parser=finite, help="worst-case: seconds before the next checkpoint.")] = 3.0,
    after: Annotated[float, typer.Option(parser=finite, help="best-case: seconds after a checkpoint completes.")] = 0.5,
    offset: Annotated[float, typer.Option(parser=finite, help="now: seconds to wait after the warm-up.")] = 0.0,
    mtbf: Annotated[float, typer.Option(parser=finite, help="random: mean time between failures, seconds.")] = 60.0,
    seed: Annotated[int, typer.Option(help="random: seed.")] = 0,
    warmup: Annotated[float, typer.Option(parser=finite, help="Seconds of steady state to learn from before the fault.")] = 30.0,
    hold: Annotated[float, typer.Option(parser=finite, help="Seconds the steady state must hold to count as recovered.")] = 15.0,
    timeout: Annotated[float, typer.Option(parser=finite, help="Give up (not recovered) after this many seconds.")] = 300.0,
    replace_tm: Annotated[bool, typer.Option("--replace/--no-replace", help="Start a new TaskManager.")] = True,
    samples: Annotated[Path | None, typer.Option(help="Write every signal sample to this JSON-lines file.")] = None,
    stack_dir: StackDir = None,
    as_json: AsJson = False,
) -> None:
    """Kill a TaskManager at a chosen moment and measure the job's recovery."""
    from chronos.chaos.measure import measure_recovery
    from chronos.cli import wiring
    from chronos.model import SignalSample
    from chronos.stack.faults import KillTaskManager

    strategy = _strategy(when, before, after, offset, mtbf, seed)
    if warmup <= 0 or hold < 0 or timeout <= 0:
        raise InvalidInput("--warmup and --timeout must be positive, --hold not negative")
    sd = _stack_dir(stack_dir)
    wiring.require_stack(sd)
    with wiring.flink_client(sd, None) as client:
        record = wiring.chronos_job(client, sd, job)
        signals = wiring.live_signals(client, sd, record)
        journal = open(samples, "w") if samples else None  # noqa: SIM115 - closed in finally
        try:
            with err.status("learning the steady state") as spinner:
                def show(sample: SignalSample) -> None:
                    if journal is not None:
                        journal.write(json.dumps(asdict(sample)) + "\n")
                    spinner.update(f"{'running' if sample.running else 'DOWN'}  lag {sample.lag}  "
                                   f"throughput {sample.throughput and round(sample.throughput)}  latency {sample.p99_ms}")

                m = measure_recovery(signals, KillTaskManager(sd, replace=replace_tm), strategy, warmup_s=warmup,
                                     hold_s=hold, timeout_s=timeout, on_sample=show)
        finally:
            signals.close()
            if journal is not None:
                journal.close()
    if as_json:
        _print_json(asdict(m))
        return

    def since(ms: int | None) -> str:
        return "-" if ms is None else f"+{(ms - m.fault.injected_wall_ms) / 1000:.1f} s"

    table = Table(title=f"{m.fault.detail} ({m.strategy}, interval {format_interval(m.interval_ms)})",
                  show_header=False, title_justify="left")
    table.add_row("fault", time.strftime("%H:%M:%S", time.localtime(m.fault.injected_wall_ms / 1000)))
    table.add_row("detected (job left RUNNING)", since(m.detected_ms))
    table.add_row("all tasks RUNNING", since(m.running_ms))
    table.add_row("recovered (steady state held)", since(m.recovered_ms) if m.recovered_ms else f"NOT within {timeout:g} s")
    table.add_row("records replayed", "-" if m.records_reprocessed is None else f"{m.records_reprocessed:,}")
    table.add_row("peak lag", "-" if m.peak_lag is None else f"{m.peak_lag:,.0f}")
    age = m.checkpoint_age_at_fault_ms
    table.add_row("checkpoint age at fault", "-" if age is None else f"{age} ms")
    table.add_row("restored checkpoint", str(m.restored_checkpoint_id) if m.restored_checkpoint_id is not None else "-")
    out.print(table)
    if m.recovery_s is None:
        raise typer.Exit(2)


@chaos_app.command("run")
def chaos_run(
    file: Annotated[Path, typer.Argument(help="Experiment file (YAML or JSON).")],
    job: Annotated[str | None, typer.Option("--job", help="Job id \\[default: the one running job chronos submitted].")] = None,
    hold: Annotated[float, typer.Option(parser=finite, help="Seconds the steady state must hold to count as recovered.")] = 15.0,
    timeout: Annotated[float, typer.Option(parser=finite,
                                           help="Per fault: give up (not recovered) after this many seconds.")] = 300.0,
    journal: Annotated[Path | None, typer.Option(help="Where to write the JSON journal \\[default: in the stack dir].")] = None,
    stack_dir: StackDir = None,
    as_json: AsJson = False,
) -> None:
    """Run an experiment: hypothesis before, faults, hypothesis after, rollbacks (always)."""
    from chronos.chaos.experiment import load_experiment
    from chronos.chaos.experiment_runner import JournalEvent, run_experiment
    from chronos.cli import wiring

    experiment = load_experiment(file)
    sd = _stack_dir(stack_dir)
    wiring.require_stack(sd)
    with wiring.flink_client(sd, None) as client:
        record = wiring.chronos_job(client, sd, job)
        signals = wiring.live_signals(client, sd, record)
        try:
            def show(event: JournalEvent) -> None:
                clock = time.strftime("%H:%M:%S", time.localtime(event.at_ms / 1000))
                err.print(f"[dim]{clock}[/] {event.kind:14} {event.detail}", highlight=False)

            run_id = uuid.uuid4().hex[:8]  # the experiment's keys: its output is told apart from other load's
            load = wiring.experiment_input(record, experiment.load, run_id) if experiment.load else None
            result = run_experiment(experiment, signals, wiring.stack_faults(sd), wiring.stack_rollbacks(sd), load,
                                    hold_s=hold, timeout_s=timeout, on_event=show)
        finally:
            signals.close()
    path = journal or sd / "chaos" / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(result), indent=2, default=str) + "\n")
    if as_json:
        _print_json({**asdict(result), "exactly_once": result.delivery.ok if result.delivery else None,
                     "journal_file": str(path)})
    else:
        table = Table("phase", "probe", "ok", "observed / detail", title=f"{result.title}: {result.status}", title_justify="left")
        for phase, outcome in (("before", result.before), ("after", result.after)):
            for probe in outcome.probes if outcome else ():
                table.add_row(phase, probe.name, "yes" if probe.ok else "NO", probe.detail)
        out.print(table)
        for m in result.measurements:
            out.print(f"{m.fault.kind} ({m.strategy}): " + (f"recovered in {m.recovery_s:.1f} s" if m.recovery_s is not None
                      else "NOT recovered") + f", {m.records_reprocessed} records replayed")
        out.print(result.delivery.summary() if result.delivery else
                  "exactly-once: not checked (give the experiment a `load` section to check it)")
        out.print(f"journal: {path}")
    if result.status != "completed":
        raise typer.Exit(2)


# -- status --------------------------------------------------------------------------------------
@app.command("status")
def status_cmd(
    job: Annotated[str | None, typer.Option("--job", help="Only this job id.")] = None,
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    as_json: AsJson = False,
) -> None:
    """Job state, checkpoint interval, last checkpoint, source throughput and end-to-end p99."""
    from chronos.cli import wiring
    from chronos.cli.status_report import collect_status

    sd = _stack_dir(stack_dir)
    with wiring.flink_client(sd, rest_url) as client:
        reports = collect_status(client, job, sd, time.time())
    if as_json:
        _print_json([asdict(r) for r in reports])
        return
    if not reports:
        out.print("no running jobs")
        return
    for r in reports:
        table = Table(title=f"{r.name}  {r.job_id}", show_header=False, title_justify="left")
        table.add_column("field", style="bold")
        table.add_column("value")
        table.add_row("state", r.state)
        table.add_row("checkpoint interval", format_interval(r.interval_ms) if r.interval_ms else "-")
        table.add_row("checkpoints", f"{r.completed_checkpoints} completed, {r.failed_checkpoints} failed")
        table.add_row("last checkpoint", "-" if r.last_checkpoint_ms is None else
                      f"{r.last_checkpoint_ms} ms, {(r.last_checkpoint_bytes or 0) / 1024:.0f} KiB")
        table.add_row("restored from", r.restored_from or "-")
        table.add_row("source records/s", "-" if r.source_records_per_s is None else f"{r.source_records_per_s:.0f}")
        table.add_row("end-to-end latency", "- (start `chronos observe run --background`)" if r.p99_latency_ms is None
                      else f"p50 {r.p50_latency_ms or 0:.0f} ms, p99 {r.p99_latency_ms:.0f} ms")
        out.print(table)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", envvar=DEBUG_ENV,
                                        help="On an unexpected error, print the traceback too.")] = False,
) -> None:
    """chronos: keeps a Flink job's checkpoint interval right for its QoS targets."""
    if debug:
        os.environ[DEBUG_ENV] = "1"  # read by main() after the command has failed


def _say_error(message: str) -> None:
    line = redact(" ".join(message.split()) or "no detail")
    err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)


def _is_usage_error(exc: Exception) -> bool:
    """A command-line usage error (unknown option, bad value, missing argument): click's, of whichever
    click typer carries (recent typers vendor their own)."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def main() -> None:
    """Entry point: every failure is one line on stderr and a non-zero exit (the traceback of an
    unexpected one only with --debug); what chronos writes is private to its user (umask 077)."""
    os.umask(0o077)
    redirect_if_asked()  # a background helper: its output rolled over by size
    try:
        code = app(standalone_mode=False)  # click's own errors come back here too, to be said in one line
    except ChronosError as exc:
        _say_error(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        _say_error("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a bare traceback
        if _is_usage_error(exc):
            context = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
                out.print(context.get_help(), highlight=False)  # a bare group: its help, as click would
            else:
                _say_error(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(int(exc.exit_code))  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":  # Ctrl-C at a prompt or during a command
            _say_error("interrupted")
            sys.exit(130)
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        _say_error(f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
