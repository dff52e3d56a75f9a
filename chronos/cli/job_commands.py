"""`chronos job`: submit, adopt, stop, list and retune Flink jobs. A retune goes through the same journaled
`Retuner` as `chronos tune` (crash-safe, rolled back on failure, verified), wired in `cli/wiring.py`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from chronos.cli.common import AsJson, Bootstrap, RestUrl, StackDir, out
from chronos.cli.common import print_json as _print_json
from chronos.cli.common import stack_dir_of as _stack_dir
from chronos.connection_security import KafkaSecurity
from chronos.errors import FlinkRequestFailed, InvalidInput
from chronos.model import CheckpointSettings, JobIO, JobSpec, format_interval, parse_interval_ms

if TYPE_CHECKING:
    from chronos.flink.replies import JobSummary
    from chronos.tune.retune import RetuneOutcome

job_app = typer.Typer(help="Submit, stop, list and retune Flink jobs.", no_args_is_help=True)



def _settings(interval: str, state_backend: str, incremental: bool) -> CheckpointSettings:
    if state_backend not in {"hashmap", "rocksdb"}:
        raise InvalidInput(f"unknown state backend {state_backend!r}: choose hashmap or rocksdb")
    return CheckpointSettings(parse_interval_ms(interval), state_backend, incremental)


def _path_option(path: str) -> str:
    if path not in {"rest", "cli"}:
        raise InvalidInput(f"unknown submission path {path!r}: choose rest or cli")
    return path


BUILTIN_JOB_FILES = {"zones": "speeding_zones.yaml"}


def _job_from(job: str, file: Path | None, bootstrap: str, parallelism: int, window: int,
              python_udf: bool, kafka: KafkaSecurity) -> tuple[JobSpec, JobIO]:
    """The spec and I/O of a built-in job (demo, zones) or of a user's job file; `kafka`: how chronos logs in to
    `bootstrap` unless a job file says."""
    from chronos.jobs.demo import DemoSettings, demo_spec
    from chronos.jobs.job_file import load_job_file

    if file is not None:
        return load_job_file(file, {"bootstrap": bootstrap}, kafka=kafka)
    if job == "demo":
        demo = DemoSettings(bootstrap=bootstrap, parallelism=parallelism, window_s=window, python_udf=python_udf,
                            kafka=kafka)
        return demo_spec(demo), JobIO(bootstrap, demo.input_topic, demo.output_topic, kafka=kafka)
    if job in BUILTIN_JOB_FILES:
        from chronos.jobs.shipped import shipped

        spec, io = load_job_file(shipped(BUILTIN_JOB_FILES[job]), {"bootstrap": bootstrap}, kafka=kafka)
        return replace(spec, parallelism=parallelism), io
    raise InvalidInput(f"unknown job {job!r}: chronos knows 'demo' and 'zones'; describe your own with --file")


@job_app.command("submit")
def job_submit(
    job: Annotated[str, typer.Argument(help="The job to run: demo, zones (ignored with --file).")] = "demo",
    file: Annotated[Path | None, typer.Option("--file", help="Your job, described in a YAML job file.")] = None,
    interval: Annotated[str, typer.Option(help="Checkpoint interval, e.g. 10s, 500ms, 2min.")] = "10s",
    parallelism: Annotated[int, typer.Option(min=1, max=32768, help="Parallelism of the job.")] = 2,
    state_backend: Annotated[str, typer.Option(help="hashmap | rocksdb")] = "hashmap",
    incremental: Annotated[bool, typer.Option(help="Incremental checkpoints (rocksdb).")] = False,
    window: Annotated[int, typer.Option(min=1, max=86400, help="demo: window length in seconds.")] = 5,
    python_udf: Annotated[bool, typer.Option("--python-udf", help="demo: average speeds in a Python UDF.")] = False,
    from_savepoint: Annotated[str | None, typer.Option(help="Restore from this savepoint.")] = None,
    path: Annotated[str, typer.Option(help="Submission path: rest (fast) or cli (flink run).")] = "rest",
    create_topics: Annotated[bool, typer.Option(help="Create the job's topics if missing.")] = True,
    wait: Annotated[bool, typer.Option(help="Wait until every task is RUNNING.")] = True,
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    bootstrap: Bootstrap = None,
    as_json: AsJson = False,
) -> None:
    """Submit a job to the Flink cluster and remember how to restart it."""
    from chronos.cli import wiring
    from chronos.jobs.topics import ensure_topics
    from chronos.stack.job_records import JobRecord

    settings = _settings(interval, state_backend, incremental)
    if parallelism < 1:
        raise InvalidInput("--parallelism must be at least 1")
    if file is None and job != "demo" and job not in BUILTIN_JOB_FILES:
        raise InvalidInput(f"unknown job {job!r}: chronos knows 'demo' and 'zones'; describe your own with --file")
    sd = _stack_dir(stack_dir)
    state = wiring.require_stack(sd)
    servers = bootstrap or state.bootstrap
    spec, io = _job_from(job, file, servers, parallelism, window, python_udf, wiring.kafka_security(sd, servers))
    if create_topics:
        ensure_topics(io.bootstrap, [*io.input_topics, io.output_topic], partitions=2, security=io.kafka)
    with wiring.flink_client(sd, rest_url) as client:
        start = time.monotonic()
        job_id = wiring.submitter(_path_option(path), client, sd).submit(spec, settings, from_savepoint)
        wiring.job_records(sd).save(JobRecord(job_id, spec, settings, restored_from=from_savepoint, io=io))
        if wait:
            client.wait_until_running(job_id)
    seconds = time.monotonic() - start
    if as_json:
        _print_json({"job_id": job_id, "name": spec.name, "interval_ms": settings.interval_ms, "seconds": round(seconds, 2)})
    else:
        out.print(f"submitted {spec.name} as job {job_id} (interval {format_interval(settings.interval_ms)}, "
                  f"{'running' if wait else 'submitted'} after {seconds:.1f} s)")


@job_app.command("adopt")
def job_adopt(
    job_id: Annotated[str, typer.Argument(help="Flink job id of a running job chronos did not submit.")],
    file: Annotated[Path, typer.Option("--file", help="The job, described in a YAML job file.")],
    state_backend: Annotated[str, typer.Option(help="hashmap | rocksdb (as the job runs).")] = "hashmap",
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    bootstrap: Bootstrap = None,
) -> None:
    """Take a running job under chronos's care: after this, `chronos tune --job ID` can retune it."""
    from chronos.cli import wiring
    from chronos.jobs.job_file import load_job_file
    from chronos.stack.job_records import JobRecord

    sd = _stack_dir(stack_dir)
    with wiring.flink_client(sd, rest_url) as client:
        detail = client.job(job_id)
        if detail.state != "RUNNING":
            raise InvalidInput(f"job {job_id} is {detail.state}; only a running job can be adopted")
        servers = bootstrap or wiring.bootstrap(sd, None)
        spec, io = load_job_file(file, {"bootstrap": servers}, kafka=wiring.kafka_security(sd, servers))
        if detail.name != spec.name:
            raise InvalidInput(f"job {job_id} is named {detail.name!r} but the job file says {spec.name!r}")
        interval = client.checkpoint_config(job_id).interval
    wiring.job_records(sd).save(JobRecord(job_id, spec, _settings(f"{interval}ms", state_backend, False), io=io))
    out.print(f"adopted {spec.name} ({job_id}) at interval {format_interval(interval)}; tune it with "
              f"`chronos tune --job {job_id}`")


@job_app.command("stop")
def job_stop(
    job_id: Annotated[str, typer.Argument(help="Flink job id.")],
    savepoint: Annotated[bool, typer.Option(
        "--savepoint/--no-savepoint", " /--cancel",  # --cancel: the word Flink's own CLI uses
        help="Stop with a savepoint, or cancel it (--no-savepoint, --cancel).")] = True,
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
) -> None:
    """Stop a job with a savepoint (printing its path), or cancel it."""
    from chronos.cli import wiring

    sd = _stack_dir(stack_dir)
    with wiring.flink_client(sd, rest_url, patient=True) as client:
        if not savepoint:
            client.job(job_id)
            client.cancel(job_id)
            out.print(f"cancelled {job_id}")
            return
        target = wiring.savepoint_dir(sd)
        location = client.stop_with_savepoint(job_id, target)
    store = wiring.job_records(sd)
    record = store.get(job_id)
    if record is not None:
        store.save(replace(record, stopped_with_savepoint=location))
    out.print(location)


@job_app.command("list")
def job_list(stack_dir: StackDir = None, rest_url: RestUrl = None, as_json: AsJson = False) -> None:
    """List the cluster's jobs."""
    from chronos.cli import wiring

    with wiring.flink_client(_stack_dir(stack_dir), rest_url) as client:
        jobs = client.jobs()
    if as_json:
        _print_json([j.model_dump() for j in jobs])
        return
    out.print(jobs_table(jobs))


def jobs_table(jobs: Sequence[JobSummary]) -> Table:
    """Newest first. The id is never cut (the hints printed next need it whole): on a narrow terminal
    the names fold instead."""
    table = Table()
    table.add_column("job id", no_wrap=True, min_width=32)
    table.add_column("name", overflow="fold")
    table.add_column("state", no_wrap=True)
    table.add_column("running for", no_wrap=True, justify="right")
    for j in sorted(jobs, key=lambda j: -j.start_time):
        table.add_row(j.jid, j.name, j.state, "-" if j.duration < 0 else f"{j.duration / 1000:.0f} s")  # -1: unknown
    return table


@job_app.command("retune")
def job_retune(
    job_id: Annotated[str, typer.Argument(help="Flink job id (submitted or adopted by chronos).")],
    interval: Annotated[str, typer.Option(help="New checkpoint interval.")],
    path: Annotated[str, typer.Option(help="Submission path: rest or cli.")] = "rest",
    dry_run: Annotated[bool, typer.Option(help="Say what would happen, change nothing.")] = False,
    db: Annotated[Path | None, typer.Option(help="The journal (shared with `chronos tune`) "
                                                  "\\[default: STACK_DIR/profiles.db].")] = None,
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    as_json: AsJson = False,
) -> None:
    """Stop-with-savepoint and restart a job with a new checkpoint interval, journaled like `chronos tune`'s.

    Verified (the new interval in force); rolled back from the same savepoint if the new one cannot run.

    Resumable: an interrupted retune of the job is finished first, from the journal.

    A job stopped with a savepoint (`chronos job stop`) is restarted from it.
    """
    from chronos.cli import wiring
    from chronos.tune.retune import TunedJob

    sd = _stack_dir(stack_dir)
    new_ms = parse_interval_ms(interval)
    submission_path = _path_option(path)
    record = wiring.job_records(sd).get(job_id)
    if record is None:
        raise InvalidInput(f"job {job_id} was not submitted by chronos here: its spec is unknown, so it cannot be restarted")
    if record.replaced_by:
        raise InvalidInput(f"job {job_id} was already replaced by {record.replaced_by}; retune that one")
    job = TunedJob(job_id, record.spec, record.settings)
    journal = wiring.journal((db or sd / "profiles.db").expanduser())
    try:
        with wiring.flink_client(sd, rest_url, patient=True) as client:
            pending = journal.unfinished(record.spec.name)
            pending = pending if pending is not None and pending.old_job_id == job_id else None
            state = client.job(job_id).state
            stopped_with = record.stopped_with_savepoint if state != "RUNNING" else None
            if pending is None and state != "RUNNING" and stopped_with is None:
                raise InvalidInput(f"job {job_id} is {state} and has no savepoint on record; nothing to restart from")
            if dry_run:
                what = (f"finish retune {pending.retune_id} of {job_id}, interrupted at step {pending.step}"
                        if pending is not None else
                        f"restart {job_id} from its savepoint {stopped_with}" if stopped_with is not None
                        else f"stop {job_id} with a savepoint and restart it")
                out.print(f"would {what} with interval "
                          f"{format_interval(pending.to_interval_ms if pending is not None else new_ms)} "
                          f"(now {format_interval(record.settings.interval_ms)})")
                return
            retuner = wiring.retuner(client, sd, journal, record.io, submission_path)
            outcome: RetuneOutcome
            if pending is not None:
                outcome = retuner.resume(pending, job)
            elif stopped_with is not None:
                outcome = retuner.restart_stopped(job, new_ms, stopped_with, "chronos job retune (job was stopped)")
            else:
                outcome = retuner.retune(job, new_ms, "chronos job retune")
    finally:
        journal.close()
    resumed = pending is not None or stopped_with is not None
    _say_retune(job_id, outcome, resumed, as_json)


def _say_retune(job_id: str, outcome: RetuneOutcome, resumed: bool, as_json: bool) -> None:
    entry = outcome.entry
    if outcome.outcome == "abandoned":
        raise FlinkRequestFailed(f"the retune of {job_id} was abandoned: {entry.note}; it runs on at "
                                 f"{format_interval(entry.from_interval_ms)}")
    if as_json:
        _print_json({"old_job_id": job_id, "new_job_id": outcome.job.job_id, "savepoint": entry.savepoint,
                    "savepoint_s": outcome.savepoint_s, "submitted_s": outcome.submitted_s,
                    "running_s": outcome.downtime_s, "resumed": resumed, "outcome": outcome.outcome,
                    "retune_id": entry.retune_id, "interval_ms": outcome.job.settings.interval_ms})
    else:
        how = "resumed from its savepoint" if resumed else (
            f"savepoint {outcome.savepoint_s or 0:.2f} s, submitted {outcome.submitted_s or 0:.2f} s,")
        out.print(f"job {job_id} -> {outcome.job.job_id}: {how} all tasks RUNNING {outcome.downtime_s or 0:.2f} s")
    if outcome.outcome == "rolled-back":
        raise FlinkRequestFailed(f"interval {format_interval(entry.to_interval_ms)} could not run ({entry.note}); "
                                 f"{outcome.job.job_id} runs at {format_interval(entry.from_interval_ms)} again, "
                                 f"from the same savepoint")


