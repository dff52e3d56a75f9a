"""`chronos tune`: keep a live job's checkpoint interval where its QoS targets hold."""

from __future__ import annotations

import socket
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from chronos.cli.common import RestUrl, StackDir, err, finite, out, print_json_line, stack_dir_of
from chronos.cli.graceful import graceful_stop
from chronos.errors import ChronosError, InvalidInput, field_error
from chronos.input_files import read_mapping
from chronos.model import check_url, parse_interval_ms
from chronos.tune.realizer_choice import Requested

if TYPE_CHECKING:
    from chronos.optimizer.policy import TunePolicy
    from chronos.tune.loop import LoopSettings

REALIZE: dict[str, Requested] = {"auto": "auto", "paced": "paced", "restart": "restart"}
STOP_WITHIN_S = 1.5  # how long a stop asked by SIGTERM/SIGINT may wait for the step in flight

POLICY_FLAGS = ("strategy", "static_interval_s", "interval_min_s", "interval_max_s", "startup_grace_s", "cooldown_s",
                "max_retunes_per_hour", "horizon_s", "latency_window_s", "safety_margin")


def _check_metrics_port(port: int, address: str) -> None:
    from chronos.stack.ports import port_in_use

    if not -1 <= port <= 65535:
        raise InvalidInput(f"--metrics-port {port} is out of range: -1 (off), 0 (any free port) or 1..65535")
    if port >= 0:
        try:
            socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise InvalidInput(f"--metrics-address {address[:80]!r} is not an address of this host chronos can bind "
                               "(it does not resolve)") from None
    if port > 0 and port_in_use(port, address):
        raise InvalidInput(f"--metrics-port {port} on {address} is in use or not bindable; pick another, "
                           "0 for any free one, -1 for none")


def _seconds(text: str | None) -> float | None:
    return None if text is None else parse_interval_ms(text) / 1000


# How often the tuner may read, decide and look, and how long it may wait: below these it only loads the cluster
# (a REST read every millisecond) or calls a healthy loop stalled; above them it no longer watches the job.
LOOP_BOUNDS_S = {"--collect-every": (1.0, 3600.0, "Flink's metrics change no faster"),
                 "--decide-every": (1.0, 86_400.0, "a decision needs fresh readings"),
                 "--learn-latency-every": (10.0, 7 * 86_400.0, "a p99 needs that much steady running"),
                 "--stall-after": (60.0, 7 * 86_400.0, "a retune's own waits take that long"),
                 "--fit-timeout": (1.0, 3600.0, "a model fit takes seconds"),
                 "--discover-every": (1.0, 3600.0, "the API server is listed no more often")}


def _loop_seconds(flag: str, text: str) -> float:
    """A loop duration flag, refused in one line outside its bounds."""
    least, most, why = LOOP_BOUNDS_S[flag]
    seconds = parse_interval_ms(text) / 1000
    if not least <= seconds <= most:
        raise InvalidInput(f"{flag} {text[:40]!r} is out of range: {least:g} s to {most:g} s ({why})")
    return seconds


def _pause_watch_s(text: str) -> float:
    seconds = parse_interval_ms(text) / 1000
    if seconds > 600:
        raise InvalidInput(f"--pause-watch {text[:40]!r} is out of range: at most 10 min (it delays the tuner's start)")
    return seconds


def _kube_names(namespaces: list[str], deployment: str | None) -> None:
    from chronos.model import check_kube_name, check_kube_namespace

    for namespace in namespaces:
        check_kube_namespace(namespace, "--discover" if len(namespaces) > 1 or deployment is None else "--namespace")
    if deployment is not None:
        check_kube_name(deployment, "--flink-deployment")


def _config_fields(config: Path | None) -> dict[str, Any]:
    if config is None:
        return {}
    from chronos.optimizer.policy import policy_fields

    return policy_fields(read_mapping(config, "tune config", "of policy fields"), f"tune config {config}")


def build_policy(config: Path | None, flags: dict[str, Any]) -> TunePolicy:
    """The policy from a YAML file (every TunePolicy field, snake or kebab case) overridden by flags."""
    from chronos.optimizer.policy import TunePolicy

    data = _config_fields(config)
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        return TunePolicy(**data)
    except ValidationError as exc:
        raise InvalidInput(f"invalid tune policy: {field_error(exc.errors())}") from exc


def tune(
    job: Annotated[str | None, typer.Option(help="Flink job id \\[default: the single running job chronos submitted].")] = None,
    latency_p99: Annotated[str | None, typer.Option(
        help="Target p99 end-to-end latency, e.g. 1s, 800ms \\[default: none: tuned for recovery alone].")] = None,
    recovery: Annotated[str | None, typer.Option(help="Target recovery time after a failure, e.g. 60s.")] = None,
    strategy: Annotated[str | None, typer.Option(help="chronos | static | young | daly | khaos \\[default: chronos].")] = None,
    static_interval: Annotated[str | None, typer.Option(help="The interval the static strategy holds.")] = None,
    interval_min: Annotated[str | None, typer.Option(help="Shortest interval to choose \\[default: 1s].")] = None,
    interval_max: Annotated[str | None, typer.Option(help="Longest interval to choose \\[default: 2min].")] = None,
    startup_grace: Annotated[str | None, typer.Option(help="No decision this long after a (re)start \\[default: 90s].")] = None,
    cooldown: Annotated[str | None, typer.Option(help="Least time between retunes \\[default: 5min].")] = None,
    max_retunes_per_hour: Annotated[int | None, typer.Option(
        min=0, max=3600, help="Cap on retunes per hour \\[default: 4].")] = None,
    horizon: Annotated[str | None, typer.Option(help="Forecast horizon \\[default: 5min].")] = None,
    latency_window: Annotated[str | None, typer.Option(help="Window of the observed p99 \\[default: 60s].")] = None,
    safety_margin: Annotated[float | None, typer.Option(
        parser=finite, help="Headroom under each target \\[default: 0.1].")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML file of policy fields (flags override it).")] = None,
    decide_every: Annotated[str, typer.Option(help="How often to decide.")] = "30s",
    collect_every: Annotated[str, typer.Option(help="How often to read the job's signals.")] = "5s",
    learn_latency_every: Annotated[str, typer.Option(
        help="Each this long of steady running at one interval, the job's own p99 becomes a point of the latency "
             "model (at least five intervals).")] = "10min",
    duration: Annotated[str | None, typer.Option(help="Stop after this long \\[default: until Ctrl-C].")] = None,
    db: Annotated[Path | None, typer.Option(help="Profile + journal database \\[default: <stack dir>/profiles.db].")] = None,
    metrics_port: Annotated[int, typer.Option(help="Serve Prometheus metrics on this port (0: any free port, -1: off).")] = 9464,
    metrics_address: Annotated[str, typer.Option(help="Address the metrics endpoint binds.")] = "127.0.0.1",
    fit_timeout: Annotated[str, typer.Option(
        help="Give up a model fit after this long (its process is killed; the models in use stay).")] = "5min",
    stall_after: Annotated[str, typer.Option(
        help="/healthz on the metrics port fails once no step has completed for this long (a frozen loop; "
             "a retune's own timeouts stay below it).")] = "15min",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only recommend: decide and journal, never retune.")] = False,
    realize: Annotated[str, typer.Option(
        help="How a decided interval reaches the job: paced (chronos triggers its checkpoints at the chosen cadence, "
             "no restart; the job's own interval is the fallback), restart (stop-with-savepoint, resubmit), or auto "
             "(paced where the cluster offers the checkpoint trigger endpoint).")] = "auto",
    allow_fault: Annotated[bool, typer.Option(
        "--allow-fault", help="With no models yet: kill one TaskManager of the local stack once (after the startup "
                              "grace) to measure a recovery, so the cold start works from a measured one.")] = False,
    pause_watch: Annotated[str, typer.Option(
        help="At the start, measure the TaskManagers' GC pauses and heartbeat delays this long and propose the "
             "cluster's recovery settings (heartbeats, restart delay, spare capacity) with their predicted effect; "
             "'off' skips it. Applied only by `chronos recommend --apply`.")] = "3s",
    job_recovery_settings: Annotated[bool, typer.Option(
        help="Resubmit the job with the proposal's job-level recovery settings (restart delay, task-local "
             "recovery) at its next restart retune; never a restart of their own.")] = True,
    flink_deployment: Annotated[str | None, typer.Option(
        help="Tune this FlinkDeployment (Flink Kubernetes Operator): retune by patching its flinkConfiguration.")] = None,
    namespace: Annotated[str, typer.Option(envvar="POD_NAMESPACE", help="Namespace of the FlinkDeployment.")] = "default",
    job_file: Annotated[Path | None, typer.Option(
        help="With --flink-deployment: a job file naming the job and its io (topics, latency source) \\[default: "
             "none: its name from Flink, its rate and lag from Flink's metrics, no end-to-end latency].")] = None,
    reporter_url: Annotated[list[str] | None, typer.Option(
        help="Flink Prometheus reporter endpoint to read lag and records from (repeatable) \\[default: the stack's].")] = None,
    stack_dir: StackDir = None,
    rest_url: RestUrl = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines instead of the live view: one per reading, "
                                                         "decision, retune and failure, then a summary.")] = False,
    jobs: Annotated[Path | None, typer.Option(
        help="Tune every job of this file in one process (YAML: `defaults:` policy fields, `jobs:` each with a name, "
             "a Flink job id or a FlinkDeployment, its own policy); read again when it changes or on SIGHUP. "
             "Policy flags go in the file then.")] = None,
    discover: Annotated[list[str] | None, typer.Option(
        help="Tune every FlinkDeployment of this namespace annotated chronos/tune: \"true\" (repeatable), its "
             "targets in chronos/<policy-field> annotations over --config and the policy flags; listed every 30 s, "
             "one that loses the annotation is let go.")] = None,
    discover_every: Annotated[str, typer.Option(help="With --discover: how often the namespaces are listed.")] = "30s",
    workers: Annotated[int, typer.Option(min=1, max=256, help="With --jobs or --discover: job steps run at once.")] = 8,
    fits_at_once: Annotated[int, typer.Option(
        min=1, max=64, help="With --jobs or --discover: model-fitting processes alive at once, across the jobs.")] = 2,
) -> None:
    """Watch a running job and retune its checkpoint interval when load or QoS call for it.

    collect -> evaluate -> decide -> realize (pace the checkpoints, or stop-with-savepoint and resubmit) -> verify.

    Every retune and cadence change is journaled: if chronos dies mid-retune, the next `chronos tune` finishes it
    first; a paced job keeps checkpointing at its own interval while no tuner runs, and the next one takes the
    journaled cadence over.
    """
    from chronos.cli.tuning_session import TuneRequest, run_tuner

    _kube_names(list(discover) if discover else [namespace] if flink_deployment else [], flink_deployment)
    policy_flags = {
        "latency_p99_ms": None if latency_p99 is None else parse_interval_ms(latency_p99),
        "recovery_s": _seconds(recovery), "strategy": strategy, "static_interval_s": _seconds(static_interval),
        "interval_min_s": _seconds(interval_min), "interval_max_s": _seconds(interval_max),
        "startup_grace_s": _seconds(startup_grace), "cooldown_s": _seconds(cooldown),
        "max_retunes_per_hour": max_retunes_per_hour, "horizon_s": _seconds(horizon),
        "latency_window_s": _seconds(latency_window), "safety_margin": safety_margin,
    }
    if jobs is not None or discover:
        one_job = {"--job": job, "--flink-deployment": flink_deployment, "--job-file": job_file,
                   "--allow-fault": allow_fault or None, "--jobs": jobs if discover else None}
        policy_given = {"--config": config, "--latency-p99": latency_p99, "--recovery": recovery,
                        "--strategy": strategy, "--static-interval": static_interval, "--interval-min": interval_min,
                        "--interval-max": interval_max, "--startup-grace": startup_grace, "--cooldown": cooldown,
                        "--max-retunes-per-hour": max_retunes_per_hour, "--horizon": horizon,
                        "--latency-window": latency_window, "--safety-margin": safety_margin}
        clashing = [flag for flag, value in (one_job | (policy_given if jobs is not None else {})).items()
                    if value is not None]
        if clashing:
            one = len(clashing) == 1
            raise InvalidInput(f"--discover takes each job from its FlinkDeployment: {', '.join(clashing)} "
                               f"{'does' if one else 'do'} not go with it" if discover else
                               f"--jobs takes each job and its policy from the file: {', '.join(clashing)} "
                               f"{'goes' if one else 'go'} in it (a job's entry, or `defaults:` for every job)")
        defaults = {**_config_fields(config), **{k: v for k, v in policy_flags.items() if v is not None}}
        _tune_jobs(jobs, tuple(discover or ()), defaults, _loop_seconds("--discover-every", discover_every), workers,
                   fits_at_once,
                   _loop_settings(collect_every, decide_every, dry_run, learn_latency_every),
                   db, stack_dir, rest_url, reporter_url, metrics_port, metrics_address, fit_timeout, stall_after,
                   duration, as_json, realize)
        return
    policy = build_policy(config, policy_flags)
    realize_by = REALIZE.get(realize)
    if realize_by is None:
        raise InvalidInput(f"--realize {realize!r}: one of auto, paced, restart")
    _check_metrics_port(metrics_port, metrics_address)  # before any of the tuner is set up
    reporter_url = [check_url(url, "--reporter-url") for url in reporter_url] if reporter_url else None
    sd = stack_dir_of(stack_dir)
    request = TuneRequest(
        policy=policy,
        loop=_loop_settings(collect_every, decide_every, dry_run, learn_latency_every),
        job=job, db=(db or sd / "profiles.db").expanduser(), stack_dir=sd, rest_url=rest_url,
        reporter_urls=reporter_url, metrics_port=metrics_port, metrics_address=metrics_address,
        fit_timeout_s=_loop_seconds("--fit-timeout", fit_timeout), stall_after_s=_loop_seconds("--stall-after", stall_after),
        run_for_s=_seconds(duration), as_json=as_json,
        flink_deployment=flink_deployment, namespace=namespace, job_file=job_file, realize=realize_by,
        allow_fault=allow_fault,
        pause_watch_s=0.0 if pause_watch.strip().lower() == "off" else _pause_watch_s(pause_watch),
        job_recovery_settings=job_recovery_settings)
    # A step still running 1.5 s after the signal is cut short: a retune in flight is journaled write-ahead, and the
    # next `chronos tune` (or `chronos job retune`) finishes it from the journal.
    with graceful_stop(err.print, "stopping after the current step", abort_after_s=STOP_WITHIN_S) as stop:
        try:
            summary = run_tuner(request, stop)
        except KeyboardInterrupt:  # before the loop ran (typer would turn it into a silent exit 130)
            raise ChronosError("interrupted before tuning began") from None
    if as_json:
        print_json_line({"event": "summary", **asdict(summary)})
    else:
        now = f"{summary.interval_ms / 1000:g} s" if not summary.paced_ms else \
            f"{summary.paced_ms / 1000:g} s paced (its own {summary.interval_ms / 1000:g} s holds until a tuner runs again)"
        out.print(f"tuned {summary.job_id} for {summary.elapsed_s:.0f} s: {summary.decisions} decisions, "
                  f"{summary.retunes} retunes, interval now {now}; QoS violations: "
                  f"latency {summary.latency_violation_s} s, recovery {summary.recovery_violation_s} s")


def _loop_settings(collect_every: str, decide_every: str, dry_run: bool, learn_latency_every: str) -> LoopSettings:
    from chronos.tune.loop import LoopSettings

    collect_s, decide_s = _loop_seconds("--collect-every", collect_every), _loop_seconds("--decide-every", decide_every)
    if decide_s < collect_s:
        raise InvalidInput(f"--decide-every {decide_every!r} is shorter than --collect-every {collect_every!r}: a "
                           "decision needs at least one new reading")
    return LoopSettings(collect_every_s=collect_s, decide_every_s=decide_s, dry_run=dry_run,
                        learn_latency_s=_loop_seconds("--learn-latency-every", learn_latency_every))


def _tune_jobs(jobs: Path | None, discover: tuple[str, ...], defaults: dict[str, Any], discover_every_s: float,
               workers: int,
               fits_at_once: int, loop: LoopSettings, db: Path | None,
               stack_dir: Path | None, rest_url: str | None, reporter_url: list[str] | None, metrics_port: int,
               metrics_address: str, fit_timeout: str, stall_after: str, duration: str | None, as_json: bool,
               realize: str) -> None:
    """`chronos tune --jobs FILE` or `--discover NAMESPACE`: every job of the file, or every annotated
    FlinkDeployment, one controller (chronos.cli.fleet_session)."""
    from chronos.cli.fleet_session import FleetRequest, run_fleet

    realize_by = REALIZE.get(realize)
    if realize_by is None:
        raise InvalidInput(f"--realize {realize!r}: one of auto, paced, restart")
    _check_metrics_port(metrics_port, metrics_address)
    urls = [check_url(url, "--reporter-url") for url in reporter_url] if reporter_url else None
    sd = stack_dir_of(stack_dir)
    request = FleetRequest(jobs_file=jobs, discover=discover, defaults=defaults, discover_every_s=discover_every_s,
                           loop=loop,
                           db=(db or sd / "profiles.db").expanduser(), stack_dir=sd,
                           rest_url=rest_url, reporter_urls=urls, metrics_port=metrics_port,
                           metrics_address=metrics_address, fit_timeout_s=_loop_seconds("--fit-timeout", fit_timeout),
                           stall_after_s=_loop_seconds("--stall-after", stall_after), run_for_s=_seconds(duration),
                           as_json=as_json, realize=realize_by, workers=workers, fits_at_once=fits_at_once)
    with graceful_stop(err.print, "stopping after the steps in flight", abort_after_s=STOP_WITHIN_S) as stop:
        try:
            summary = run_fleet(request, stop)
        except KeyboardInterrupt:
            raise ChronosError("interrupted before tuning began") from None
    late = summary.lateness
    if as_json:
        print_json_line({"event": "summary", "elapsed_s": summary.elapsed_s, "dry_run": summary.dry_run,
                         "steps": late.steps, "skipped_steps": late.skipped, "lateness_p50_s": round(late.p50_s, 3),
                         "lateness_p99_s": round(late.p99_s, 3), "lateness_max_s": round(late.max_s, 3),
                         "jobs": [asdict(job) for job in summary.jobs]})
        return
    out.print(f"tuned {len(summary.jobs)} jobs for {summary.elapsed_s:.0f} s: {late.steps} steps, {late.skipped} "
              f"skipped (a step still running), start lateness p99 {late.p99_s:.2f} s")
    for job in summary.jobs:
        out.print(f"  {job.name}: {job.flink_name or '-'} {job.job_id or ''} {job.decisions} decisions, "
                  f"{job.retunes} retunes, {job.failures} failures; QoS violations latency {job.latency_violation_s} s, "
                  f"recovery {job.recovery_violation_s} s" + (f"; let go: {job.left}" if job.left else ""),
                  highlight=False)
