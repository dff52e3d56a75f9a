"""`chronos chaos`: break a job on purpose (one fault, or an experiment file) and measure its recovery."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from chronos.cli.common import AsJson, StackDir, err, finite, out
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.errors import InvalidInput
from chronos.model import format_interval
from chronos.terminal_text import styled

chaos_app = typer.Typer(help="Break a job on purpose and measure its recovery.", no_args_is_help=True)


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
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="random: seed.")] = 0,
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
    from chronos.stack.known_jobs import chronos_job

    strategy = _strategy(when, before, after, offset, mtbf, seed)
    if warmup <= 0 or hold < 0 or timeout <= 0:
        raise InvalidInput("--warmup and --timeout must be positive, --hold not negative")
    sd = _stack_dir(stack_dir)
    wiring.require_stack(sd)
    with wiring.flink_client(sd, None, patient=True) as client:
        record = chronos_job(client, wiring.job_records(sd), job)
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
                                     hold_s=hold, timeout_s=timeout, on_sample=show,
                                     settings_in_force=wiring.recovery_settings_in_force(client, sd))
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
    from chronos.stack.known_jobs import chronos_job

    experiment = load_experiment(file)
    sd = _stack_dir(stack_dir)
    wiring.require_stack(sd)
    with wiring.flink_client(sd, None, patient=True) as client:
        record = chronos_job(client, wiring.job_records(sd), job)
        signals = wiring.live_signals(client, sd, record)
        try:
            def show(event: JournalEvent) -> None:
                clock = time.strftime("%H:%M:%S", time.localtime(event.at_ms / 1000))
                err.print(styled((clock, "dim"), f" {event.kind:14} {event.detail}"), highlight=False)

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
