"""`chronos load`: the vehicle-event load generator, in the foreground or as a stack-managed helper."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from chronos.cli.common import Bootstrap, StackDir, err, finite, out, say_stale
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.cli.graceful import graceful_stop
from chronos.errors import InvalidInput

# A stop lets the batch in flight be sent; a send stuck longer than this (a broker gone) is cut short.
FLUSH_WITHIN_S = 3.0

load_app = typer.Typer(help="The load generators: vehicle events (run), a shop's orders and payments (shop).",
                       no_args_is_help=True)


def _profile(kind: str, rate: float, to: float | None, at: float, amplitude: float, period: float,
             trace: Path | None) -> Any:
    from chronos.rates import ConstantRate, SineRate, StepRate, load_trace

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
    count: Annotated[int | None, typer.Option(min=1, max=10**12, help="Stop after this many events.")] = None,
    vehicles: Annotated[int, typer.Option(min=1, max=10**8, help="Fleet size (keyed state grows with it).")] = 1000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Producer processes (one tops out near 8k events/s).")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed of the fleet's random walk.")] = 0,
    topic: Annotated[str, typer.Option(help="Input topic.")] = "vehicle-events",
    close_windows: Annotated[bool, typer.Option(help="End with a watermark flush so all windows close.")] = False,
    background: Annotated[bool, typer.Option(help="Run as a stack-managed background process.")] = False,
    stack_dir: StackDir = None,
    bootstrap: Bootstrap = None,
) -> None:
    """Produce vehicle events at a controlled rate and report the achieved rate."""
    from chronos.cli import wiring
    from chronos.jobs.fleet import VehicleFleet
    from chronos.jobs.loadgen import LoadProgress, run_load
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

    with graceful_stop(second_aborts=False, abort_after_s=FLUSH_WITHIN_S) as stop:
        if workers > 1:
            plan = LoadPlan(servers, topic, shape, vehicles, seed, run_id, end, count, workers,
                            security=wiring.kafka_security(sd, servers))
            report = run_parallel_load(plan, on_progress=progress, should_stop=stop.is_set, close_windows=close_windows)
        else:
            sink = wiring.event_sink(servers, topic, wiring.kafka_security(sd, servers))
            try:
                report = run_load(sink, VehicleFleet(vehicles, seed=seed, run_id=run_id), shape, duration_s=end,
                                  max_events=count, on_progress=progress, should_stop=stop.is_set,
                                  close_windows=close_windows)
            finally:
                sink.close()
    out.print(f"sent {report.sent:,} events in {report.elapsed_s:.1f} s: {report.achieved_rate:,.0f} events/s achieved")


@load_app.command("shop")
def load_shop(
    rate: Annotated[float, typer.Option(parser=finite, help="Records/s, orders and payments together.")] = 500.0,
    duration: Annotated[float | None, typer.Option(parser=finite, help="Seconds to run \\[default: until stopped].")] = None,
    count: Annotated[int | None, typer.Option(min=1, max=10**12, help="Stop after this many records.")] = None,
    customers: Annotated[int, typer.Option(min=1, max=10**8, help="Customers (the key space; a few order most).")] = 2000,
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed of the orders and payments.")] = 0,
    orders_topic: Annotated[str, typer.Option(help="Orders topic.")] = "shop-orders",
    payments_topic: Annotated[str, typer.Option(help="Payments topic.")] = "shop-payments",
    trace: Annotated[Path | None, typer.Option(help="A file of seconds,events_per_second rows: the rate over time "
                                                    "instead of --rate (a shop's day).")] = None,
    background: Annotated[bool, typer.Option(help="Run as a stack-managed background process.")] = False,
    stack_dir: StackDir = None,
    bootstrap: Bootstrap = None,
) -> None:
    """Produce a shop's orders and payments (the input of jobs/shop_payments.yaml) and report the achieved rate."""
    from chronos.cli import wiring
    from chronos.jobs.loadgen import LoadProgress
    from chronos.jobs.shop import ShopTopics, run_shop
    from chronos.stack.helpers import start_helper

    if rate <= 0:
        raise InvalidInput(f"invalid rate {rate}: it must be positive")
    if customers < 1:
        raise InvalidInput("--customers must be at least 1")
    shape = _profile("csv" if trace is not None else "constant", rate, None, 0.0, 0.0, 1.0, trace)
    sd = _stack_dir(stack_dir)
    servers = wiring.bootstrap(sd, bootstrap)
    if background:
        wiring.require_stack(sd)
        args = ["load", "shop", "--rate", str(rate), "--customers", str(customers), "--seed", str(seed),
                "--orders-topic", orders_topic, "--payments-topic", payments_topic, "--bootstrap", servers,
                "--stack-dir", str(sd)]
        for flag, value in (("--trace", trace), ("--duration", duration), ("--count", count)):
            if value is not None:
                args += [flag, str(value)]
        pid = start_helper(sd, "load", args)
        out.print(f"shop load running in the background (pid {pid}); stop it with `chronos load stop`")
        return

    def progress(p: LoadProgress) -> None:
        err.print(f"{p.elapsed_s:7.1f} s  sent {p.sent:>10,}  target {p.target_rate:8.0f}/s  achieved {p.achieved_rate:8.0f}/s")

    with graceful_stop(second_aborts=False, abort_after_s=FLUSH_WITHIN_S) as stop:
        report = run_shop(servers, shape, customers=customers, seed=seed,
                          topics=ShopTopics(orders_topic, payments_topic),
                          duration_s=duration if duration is not None else (None if count is not None else float("inf")),
                          max_events=count, should_stop=stop.is_set, on_progress=progress,
                          security=wiring.kafka_security(sd, servers))
    per_topic = ", ".join(f"{n:,} to {topic}" for topic, n in report.per_vehicle)
    out.print(f"sent {report.sent:,} records in {report.elapsed_s:.1f} s ({per_topic}): "
              f"{report.achieved_rate:,.0f} records/s achieved")


@load_app.command("stop")
def load_stop(stack_dir: StackDir = None) -> None:
    """Stop the background load generator."""
    from chronos.stack.helpers import stop_helper

    stopped = stop_helper(_stack_dir(stack_dir), "load", say_stale)
    out.print("stopped the load generator" if stopped else "no load generator was running")
