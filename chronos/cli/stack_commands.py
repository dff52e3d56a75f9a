"""`chronos stack`: the local stack of real Kafka and Flink on 127.0.0.1 (up, down, status, fetch)."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from chronos.cli.common import AsJson, StackDir, err, out, say_stale, timed_say
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.terminal_text import styled

if TYPE_CHECKING:
    from chronos.flink.rest import FlinkRestClient

stack_app = typer.Typer(help="The local stack: real Kafka + Flink on 127.0.0.1.", no_args_is_help=True)

SetOption = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", help="A Flink recovery setting, e.g. heartbeat.timeout=5s (repeatable).")]
SpareOption = Annotated[int, typer.Option(
    min=0, max=2, help="TaskManagers kept idle beside the one the jobs use, so a restart after a loss need not wait for a new "
         "one (each costs the memory of a TaskManager, 1.5 GiB here, and its JVM's share of the cores).")]


def _checked_settings(texts: list[str]) -> tuple[tuple[str, str], ...]:
    from chronos.flink.distribution import find_distribution
    from chronos.optimizer.recovery_config import parse_assignments, parse_version

    return parse_assignments(texts, parse_version(find_distribution().version)).values


def _spare(count: int) -> int:
    from chronos.errors import InvalidInput

    if not 0 <= count <= 2:
        raise InvalidInput(f"--spare-taskmanagers must be 0 to 2, got {count}")
    return count


@stack_app.command("up")
def stack_up(
    stack_dir: StackDir = None,
    slots: Annotated[int, typer.Option(min=1, max=1024, help="Task slots of the TaskManager.")] = 4,
    kafka_port: Annotated[int, typer.Option(min=0, max=65535, help="Kafka port (0 = a free one).")] = 0,
    rest_port: Annotated[int, typer.Option(min=0, max=65535, help="Flink REST port (0 = a free one).")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(envvar="CHRONOS_CACHE_DIR", help="Maven artifact cache.")] = None,
    jvm_opts: Annotated[str, typer.Option(
        envvar="CHRONOS_JVM_OPTS", help="Added to every JVM of the stack and of the profiling clusters beside it, "
                                        "e.g. -XX:TieredStopAtLevel=1 (less JIT work for short runs).")] = "",
    settings: SetOption = None,
    spare_taskmanagers: SpareOption = 0,
    secure: Annotated[bool, typer.Option(
        "--secure", help="Kafka over TLS with SCRAM logins and Flink's REST over mutual TLS, with a CA, certificates "
                         "and passwords generated into files only the stack's user can read.")] = False,
    as_json: AsJson = False,
) -> None:
    """Start Kafka (KRaft) and a Flink session cluster; report the running stack if already up.

    --set takes the recovery settings chronos knows (heartbeats, restart delays, local recovery), checked
    against the Flink version of the wheel; `chronos stack reconfigure` changes them on a running stack.
    """
    from chronos.stack.local_stack import StackOptions, up
    from chronos.stack.locations import default_cache_dir

    checked = _checked_settings(settings or [])
    options = StackOptions(_stack_dir(stack_dir), (cache_dir or default_cache_dir()).expanduser(),
                           slots=slots, kafka_port=kafka_port, rest_port=rest_port, jvm_opts=jvm_opts,
                           flink_settings=checked, spare_taskmanagers=_spare(spare_taskmanagers), secure=secure)
    start = time.monotonic()
    with err.status("starting the stack") as spinner:
        def report(step: str) -> None:
            err.print(styled((f"{time.monotonic() - start:5.1f} s", "dim"), f" {step}"), highlight=False)
            spinner.update(step)

        state, started = up(options, report=report)
    if as_json:
        _print_json({"started": started, "seconds": round(time.monotonic() - start, 1), **state.model_dump()})
        return
    verb = f"started in {time.monotonic() - start:.1f} s" if started else "already running"
    out.print(styled((f"stack {verb}", "bold green"), f" ({state.stack_dir})"))
    out.print(f"  Flink UI/REST  {state.rest_url}")
    out.print(f"  Kafka          {state.bootstrap}" + (f"  ({state.kafka_client.describe()})" if state.kafka_security else ""))
    if state.rest_security:
        out.print(f"  Flink REST TLS {state.rest_security.describe()}")
    base = state.prometheus_port_base
    out.print(f"  Prometheus     http://127.0.0.1:{base}-{base + 3}/metrics  (the reporter binds all interfaces)")
    for key, value in state.flink_settings:
        out.print(f"  {key}: {value}")
    if state.spare_taskmanagers:
        out.print(f"  spare TaskManagers: {state.spare_taskmanagers}")


@stack_app.command("reconfigure")
def stack_reconfigure(
    settings: SetOption = None,
    spare_taskmanagers: SpareOption = 0,
    resume: Annotated[bool, typer.Option(help="Finish an interrupted reconfiguration (nothing else).")] = False,
    pause_watch: Annotated[str, typer.Option(help="With a heartbeat.timeout: measure the TaskManagers' pauses this "
                                                  "long first and refuse a timeout under 3x the longest.")] = "10s",
    dry_run: Annotated[bool, typer.Option(help="Say what would happen, change nothing.")] = False,
    db: Annotated[Path | None, typer.Option(help="The journal (shared with `chronos tune`) "
                                                  "\\[default: STACK_DIR/profiles.db].")] = None,
    stack_dir: StackDir = None,
    as_json: AsJson = False,
) -> None:
    """Restart the stack's Flink with these recovery settings (replacing the ones in force), its jobs kept.

    Every running job is stopped with a savepoint (journaled like a retune), Flink restarted with the settings,
    every job resubmitted from its savepoint at its own interval. Interrupted anywhere, it is finished by
    `--resume` (or refused until then): no job is left stopped without a savepoint on record. Jobs chronos did
    not submit or adopt here are refused before anything is touched (their spec is unknown).
    """
    from chronos.cli import wiring
    from chronos.errors import InvalidInput
    from chronos.model import ClusterShape
    from chronos.stack.known_jobs import running_chronos_jobs

    sd = _stack_dir(stack_dir)
    target = ClusterShape(_checked_settings(settings or []), _spare(spare_taskmanagers))
    journal = wiring.journal((db or sd / "profiles.db").expanduser())
    start = time.monotonic()
    try:
        with wiring.flink_client(sd, None, patient=True) as client:
            reconfigurer = wiring.cluster_reconfigurer(client, sd, journal, timed_say(start))
            pending = reconfigurer.pending()
            if resume or pending is not None:
                if pending is None:
                    out.print("no interrupted reconfiguration on record")
                    return
                if not resume:
                    raise InvalidInput("an interrupted reconfiguration to " + ("; ".join(pending.target.lines())
                                       or "Flink's defaults") + " is on record: finish it with --resume first")
                if dry_run:
                    out.print("would finish the reconfiguration to " + "; ".join(pending.target.lines()))
                    return
                outcome = reconfigurer.resume()
            else:
                jobs = running_chronos_jobs(client, wiring.job_records(sd))
                _check_timeout_against_pauses(client, dict(target.flink_settings), pause_watch)
                if dry_run:
                    out.print("would stop " + (", ".join(f"{j.spec.name} ({j.job_id})" for j in jobs) or "no job")
                              + " with savepoints, restart Flink with " + ("; ".join(target.lines())
                              or "Flink's defaults") + " and resubmit them")
                    return
                outcome = reconfigurer.reconfigure(target, jobs)
    finally:
        journal.close()
    assert outcome is not None
    took = time.monotonic() - start
    if as_json:
        _print_json({"settings": dict(outcome.shape.flink_settings), "spare_taskmanagers":
                     outcome.shape.spare_taskmanagers, "restarted": outcome.restarted, "seconds": round(took, 1),
                     "jobs": [{"old_job_id": o.entry.old_job_id, "new_job_id": o.job.job_id, "outcome": o.outcome,
                               "downtime_s": o.downtime_s} for o in outcome.jobs]})
        return
    out.print(styled(("reconfigured", "bold green"), f" in {took:.1f} s: " + ("; ".join(outcome.shape.lines())
              or "Flink's defaults")))
    for o in outcome.jobs:
        out.print(f"  {o.job.spec.name}: {o.entry.old_job_id} -> {o.job.job_id} ({o.outcome})")


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
        out.print(styled("stack: ", (st.health, "bold")))
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


def _check_timeout_against_pauses(client: FlinkRestClient, settings: dict[str, str], watch: str) -> None:
    from chronos.model import parse_interval_ms
    from chronos.optimizer.detection import check_timeout
    from chronos.optimizer.recovery_config import duration_s, recovery_settings
    from chronos.signals.taskmanager_pauses import watch_pauses

    if "heartbeat.timeout" not in settings or watch.strip() in {"0", "0s"}:
        return
    interval = recovery_settings(client.jobmanager_config()).heartbeat_interval_s
    with err.status(f"measuring the TaskManagers' pauses for {watch}"):
        evidence, _ = watch_pauses(client, parse_interval_ms(watch) / 1000, interval)
    check_timeout(duration_s("heartbeat.timeout", settings["heartbeat.timeout"]), evidence)
