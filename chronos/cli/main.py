"""`chronos`: thin commands over the library; every known failure is one line on stderr, exit 1."""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import asdict
from importlib.metadata import version as package_version
from typing import Annotated

import typer
from rich.table import Table
from typer.core import TyperGroup

from chronos.cli import connections
from chronos.cli.chaos_commands import chaos_app
from chronos.cli.common import AsJson, RestUrl, StackDir, err, out
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.cli.job_commands import job_app
from chronos.cli.load_commands import load_app
from chronos.cli.observability_commands import dashboards, prometheus_app, report
from chronos.cli.observe_commands import observe_app
from chronos.cli.profile_commands import profile_app
from chronos.cli.recommend_command import recommend
from chronos.cli.rotating_output import redirect_if_asked
from chronos.cli.stack_commands import stack_app
from chronos.cli.tune_commands import tune
from chronos.errors import ChronosError, redact
from chronos.model import format_interval
from chronos.terminal_text import one_line, styled

DEBUG_ENV = "CHRONOS_DEBUG"
INPUT_RATE_WINDOW_S = 3.0  # what `status` waits to read the input rate off the topic's end offsets
# The order a user meets them in: bring up a stack, run a job, load it, watch it, then break, profile and
# tune it, and report; the helpers for dashboards and Prometheus last.
WORKFLOW = ("stack", "job", "load", "observe", "status", "chaos", "profile", "tune", "recommend", "report", "dashboards",
            "prometheus")


class WorkflowOrder(TyperGroup):
    """Lists the commands in workflow order (click lists them alphabetically, typer as registered)."""

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]  # typer's vendored click
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: (WORKFLOW.index(n) if n in WORKFLOW else len(WORKFLOW), n))


app = typer.Typer(
    cls=WorkflowOrder,
    help="chronos: keeps a Flink job's checkpoint interval right for its QoS targets.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
)
app.add_typer(stack_app, name="stack")
app.add_typer(load_app, name="load")
app.add_typer(observe_app, name="observe")
app.add_typer(job_app, name="job")
app.add_typer(chaos_app, name="chaos")
app.add_typer(profile_app, name="profile")
app.command("tune")(tune)
app.command("recommend")(recommend)
app.add_typer(prometheus_app, name="prometheus")
app.command("dashboards")(dashboards)
app.command("report")(report)

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
    from chronos.stack.known_jobs import input_rate_over

    sd = _stack_dir(stack_dir)
    with wiring.flink_client(sd, rest_url) as client:
        reports = collect_status(client, job, sd, time.time(), input_rate_over(wiring.job_records(sd), INPUT_RATE_WINDOW_S),
                                 wiring.journaled_cadence(sd / "profiles.db"))
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
        own = format_interval(r.interval_ms) if r.interval_ms else "-"
        measured = "" if r.measured_interval_s is None else f"; measured {r.measured_interval_s:g} s apart"
        if r.paced_ms:
            table.add_row("checkpoint interval", f"paced by chronos tune at {format_interval(r.paced_ms)}{measured} "
                          f"(its own {own} is the fallback while no tuner runs)")
        else:
            table.add_row("checkpoint interval", own + measured)
        table.add_row("realizer", f"{r.realizer} ({r.realizer_why})" if r.realizer_why else r.realizer)
        table.add_row("checkpoints", f"{r.completed_checkpoints} completed, {r.failed_checkpoints} failed"
                      + (f" ({r.failed_why})" if r.failed_why else ""))
        table.add_row("last checkpoint", "-" if r.last_checkpoint_ms is None else
                      f"{r.last_checkpoint_ms} ms, {(r.last_checkpoint_bytes or 0) / 1024:.0f} KiB")
        table.add_row("restored from", r.restored_from or "-")
        if r.input_events_per_s is not None:
            table.add_row("input events/s", f"{r.input_events_per_s:.0f}  (input topic, last {r.input_rate_window_s:g} s)")
        table.add_row("source records/s", "-" if r.source_records_per_s is None
                      else f"{r.source_records_per_s:.0f}  (Flink's meter, mean of its last 60 s)")
        table.add_row("end-to-end latency", "- (start `chronos observe run --background`)" if r.p99_latency_ms is None
                      else f"p50 {r.p50_latency_ms or 0:.0f} ms, p99 {r.p99_latency_ms:.0f} ms")
        if r.suggested_tune:
            table.add_row("targets it meets now", r.suggested_tune)
        out.print(table)


def _version(asked: bool) -> None:
    if asked:
        out.print(f"chronos {package_version('chronos-flink')}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", envvar=DEBUG_ENV,
                                        help="On an unexpected error, print the traceback too.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print chronos's version and exit.")] = False,
    rest_ca_file: Annotated[str | None, typer.Option(
        envvar=connections.REST_CA_ENV, help="A --rest-url's CA (PEM) \\[default: the system's CAs].")] = None,
    rest_cert_file: Annotated[str | None, typer.Option(
        envvar=connections.REST_CERT_ENV, help="Client certificate (PEM) for a REST API asking one (mutual TLS).")] = None,
    rest_key_file: Annotated[str | None, typer.Option(envvar=connections.REST_KEY_ENV, help="Its key (PEM).")] = None,
    rest_auth: Annotated[str | None, typer.Option(
        envvar=connections.REST_AUTH_ENV, help="Authorization header for a REST API behind a proxy: "
                                               "bearer:${env:NAME} or basic:${file:/path} (user:password).")] = None,
    kafka_security: Annotated[str | None, typer.Option(
        envvar=connections.KAFKA_SECURITY_ENV, help="YAML file with a secured broker's client settings (a job file's "
                                                    "io.kafka fields) \\[default: the job file's, else the stack's].")] = None,
) -> None:
    """chronos: keeps a Flink job's checkpoint interval right for its QoS targets.

    Secrets are given by reference only (${env:NAME}, ${file:/path}) and never written or said.
    """
    if debug:
        os.environ[DEBUG_ENV] = "1"  # read by main() after the command has failed
    connections.remember({connections.REST_CA_ENV: rest_ca_file, connections.REST_CERT_ENV: rest_cert_file,
                          connections.REST_KEY_ENV: rest_key_file, connections.REST_AUTH_ENV: rest_auth,
                          connections.KAFKA_SECURITY_ENV: kafka_security})
    connections.rest_security(os.environ)  # refused here, in one line, before any command starts
    connections.check_kafka_files(connections.kafka_security(os.environ))


def _say_error(message: str) -> None:
    """One line, whatever the message holds: newlines folded, controls escaped, credentials in URLs hidden."""
    line = redact(one_line(message) or "no detail")
    err.print(styled(("error:", "bold red"), f" {line}"), highlight=False, soft_wrap=True)


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
