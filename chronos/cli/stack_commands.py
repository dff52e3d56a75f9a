"""`chronos stack`: the local stack of real Kafka and Flink on 127.0.0.1 (up, down, status, fetch)."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from chronos.cli.common import AsJson, StackDir, err, out, say_stale
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir

stack_app = typer.Typer(help="The local stack: real Kafka + Flink on 127.0.0.1.", no_args_is_help=True)


@stack_app.command("up")
def stack_up(
    stack_dir: StackDir = None,
    slots: Annotated[int, typer.Option(help="Task slots of the TaskManager.")] = 4,
    kafka_port: Annotated[int, typer.Option(help="Kafka port (0 = a free one).")] = 0,
    rest_port: Annotated[int, typer.Option(help="Flink REST port (0 = a free one).")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(envvar="CHRONOS_CACHE_DIR", help="Maven artifact cache.")] = None,
    jvm_opts: Annotated[str, typer.Option(
        envvar="CHRONOS_JVM_OPTS", help="Added to every JVM of the stack and of the profiling clusters beside it, "
                                        "e.g. -XX:TieredStopAtLevel=1 (less JIT work for short runs).")] = "",
    as_json: AsJson = False,
) -> None:
    """Start Kafka (KRaft) and a Flink session cluster; report the running stack if already up."""
    from chronos.stack.local_stack import StackOptions, up
    from chronos.stack.locations import default_cache_dir

    options = StackOptions(_stack_dir(stack_dir), (cache_dir or default_cache_dir()).expanduser(),
                           slots=slots, kafka_port=kafka_port, rest_port=rest_port, jvm_opts=jvm_opts)
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
    from chronos.stack.artifacts import ensure_artifacts
    from chronos.stack.locations import default_cache_dir

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
    from chronos.stack.prometheus_server import local_prometheus

    st = status(_stack_dir(stack_dir))
    for line in st.stale:
        say_stale(line)
    prometheus = local_prometheus(_stack_dir(stack_dir), say_stale)  # optional: not part of the health
    if as_json:
        _print_json({"health": st.health, "components": [asdict(c) for c in st.components],
                     "helpers": dict(st.helpers), "stale": list(st.stale),
                     "prometheus": {"pid": prometheus.pid, "url": prometheus.url} if prometheus else None,
                     "state": st.state.model_dump() if st.state else None})
    else:
        out.print(f"stack: [bold]{st.health}[/]")
        table = Table("part", "pid", "alive", "ready", "detail")
        for c in st.components:
            table.add_row(c.name, str(c.pid), "yes" if c.alive else "NO", "yes" if c.ready else "NO", c.detail)
        for name, pid in st.helpers:
            table.add_row(name, str(pid), "yes", "-", "background helper")
        if prometheus is not None:
            table.add_row("prometheus", str(prometheus.pid), "yes", "-", prometheus.url)
        if st.components or st.helpers or prometheus is not None:
            out.print(table)
    if st.health != "healthy":
        raise typer.Exit(1)
