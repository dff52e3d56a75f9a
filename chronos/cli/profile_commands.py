"""`chronos profile`: record a job's workload, profile copies of it, report what was learnt."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from chronos.cli.common import AsJson, StackDir, err, finite, out, output_directory, print_json, stack_dir_of
from chronos.cli.graceful import graceful_stop
from chronos.errors import ChronosError, InvalidInput
from chronos.model import parse_interval_ms, path_safe
from chronos.profiler.events import ProfileEvents
from chronos.profiler.live_watch import TOLERANCE, LiveImpact
from chronos.rates import TraceRate
from chronos.terminal_text import shown

if TYPE_CHECKING:
    import threading

    from chronos.optimizer.model_values import FitReport
    from chronos.profiler.input_sample import InputSample
    from chronos.profiler.live_watcher import LiveWatcher
    from chronos.profiler.profile import ProfileLimits, ProfileOutcome
    from chronos.profiler.records import ProfileRun
    from chronos.profiler.report import PhaseRow
    from chronos.profiler.run import RunPlan
    from chronos.profiler.store import ProfileStore
    from chronos.profiler.study import ProfileSpace, QosTargets
    from chronos.stack.host_load import HostMeter
    from chronos.stack.job_records import JobRecord
    from chronos.stack.state import StackState

profile_app = typer.Typer(
    help="Profile a job: copies of it at several checkpoint intervals and loads, with faults, results stored.",
    no_args_is_help=True,
)

Db = Annotated[Path | None, typer.Option("--db", help="Profile database (SQLite) \\[default: <stack dir>/profiles.db].")]


def _db(stack_dir: Path, db: Path | None) -> Path:
    return (db or stack_dir / "profiles.db").expanduser()


def _interval_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("..")
    if not sep:
        raise InvalidInput(f"invalid --intervals {text!r}: expected a range such as 2s..60s")
    lo, hi = parse_interval_ms(low) // 1000, parse_interval_ms(high) // 1000
    if lo < 1 or hi <= lo:
        raise InvalidInput(f"invalid --intervals {text!r}: from at least 1s to a larger upper end")
    return lo, hi


def _scales(text: str) -> tuple[float, ...]:
    try:
        scales = tuple(sorted({float(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise InvalidInput(f"invalid --loads {text!r}: expected factors such as 1,2") from None
    if not scales or min(scales) <= 0:
        raise InvalidInput(f"invalid --loads {text!r}: factors must be positive")
    return scales


class _Bars(ProfileEvents):
    """One bar per run slot (its phase) and one for the profile (runs done, time left)."""

    def __init__(self, progress: Progress, total: TaskID, slots: list[TaskID], runs: int | None) -> None:
        self.progress, self.total, self.slots, self.runs, self.done = progress, total, slots, runs, 0

    def run_started(self, slot: int, trial: int, config: Any) -> None:
        self.progress.update(self.slots[slot], description=f"run {slot + 1}: trial {trial}, "
                             f"{config.interval_ms / 1000:g} s x{config.load_scale:g}")

    def run_phase(self, slot: int, phase: str) -> None:
        self.progress.update(self.slots[slot], status=shown(phase))

    def run_finished(self, slot: int, run: Any) -> None:
        self.done += 1
        self.progress.advance(self.total)
        self.progress.update(self.total, count=f"{self.done}/{self.runs or '-'} runs")
        self.progress.update(self.slots[slot], status="done")
        recovered = [m.recovery_s for m in run.recoveries if m.recovery_s is not None]
        p99 = run.steady.p99_ms if run.steady else None
        again = [a.p99_ms for a in run.repeat_steady if a.p99_ms is not None]
        self.progress.console.print(
            f"trial {run.trial_number}: {run.config.interval_ms / 1000:g} s, x{run.config.load_scale:g} -> {run.status}"
            + (f", p99 {p99:,.0f} ms" if p99 is not None else "")
            + "".join(f" (again after the faults: {a:,.0f} ms)" for a in again)
            + (f", recovery {max(recovered):.1f} s" if recovered else "")
            + (f" ({run.error})" if run.error else ""), highlight=False)


@profile_app.command("run")
def profile_run(
    job: Annotated[str | None, typer.Option("--job", help="Job to profile \\[default: the one chronos submitted].")] = None,
    trace: Annotated[Path | None, typer.Option(help="Workload: a CSV of seconds,events_per_second.")] = None,
    rate: Annotated[float | None, typer.Option(parser=finite, help="Workload: a constant events/s.")] = None,
    record: Annotated[str, typer.Option(help="Workload: record the live input for this long (its rate; for a job "
                                              "with a job file's copy: section, its records too, replayed into "
                                              "the copies).")] = "30s",
    replay: Annotated[str | None, typer.Option("--sample", help="Replay the input sample stored with this profile "
                                               "('last': the job's newest) instead of recording one.")] = None,
    intervals: Annotated[str, typer.Option(help="Checkpoint interval range to explore.")] = "2s..60s",
    loads: Annotated[str, typer.Option(help="Load levels, as factors on the workload.")] = "1",
    faults: Annotated[int, typer.Option(min=0, max=100, help="Worst-case TaskManager kills per run.")] = 1,
    repeats: Annotated[int, typer.Option(
        min=0, max=20, help="Extra kills in the first run, and its steady window again after them: one "
        "setting measured several times, the repeat-noise floor the models' held-out error is read against "
        "(`profile report --models`).")] = 2,
    parallel: Annotated[str, typer.Option(
        help="Runs at a time (one small Flink cluster each): a number, or 'auto': as many as the host's idle CPU holds "
             "beside the live job (measured before the first copy; at least 1, at most 2).")] = "auto",
    clusters_at_once: Annotated[int | None, typer.Option(
        min=1, max=64, help="Profiling clusters this host runs at once, across every profile of the stack (other "
                            "jobs' too): a run beyond them queues for one \\[default: 2, or --parallel if more].")] = None,
    runs: Annotated[int | None, typer.Option(min=1, max=10_000,
                                             help="Stop after this many completed runs in the profile.")] = None,
    budget: Annotated[str | None, typer.Option(
        help="The profile's wall time, recording its input included: no run starts that would end after it.")] = "10m",
    steady: Annotated[str, typer.Option(help="Fault-free window measured in each run (at least two of its intervals).")] = "30s",
    warmup: Annotated[str, typer.Option(
        help="Sampled before each fault besides the run's steady window, which its steady state is learnt from.")] = "0s",
    hold: Annotated[str, typer.Option(help="How long the steady state must hold after a fault to count as recovered.")] = "15s",
    timeout: Annotated[str, typer.Option(help="A fault not recovered from within this is reported as not recovered.")] = "180s",
    max_recovery: Annotated[str, typer.Option(help="QoS target the sampler focuses on: recovery time.")] = "60s",
    max_p99: Annotated[str, typer.Option(help="QoS target the sampler focuses on: p99 latency.")] = "5s",
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed of the design and the sampler.")] = 0,
    explore_recovery: Annotated[bool, typer.Option(
        "--explore-recovery", help="Also profile at the recovery settings `chronos recommend` proposes (heartbeats "
        "from the pauses measured on the live TaskManagers for 10 s, restart delay, a spare TaskManager): a dimension "
        "of the study beside interval and load. The trade: within the same budget about half the runs go to it, so "
        "the interval curve at the live settings gets fewer points (the phase model learns what the proposal does; "
        "the tuner's recovery model keeps to the live settings' runs).")] = False,
    copy_per_run: Annotated[bool, typer.Option(
        "--copy-per-run", help="Start a cluster and a copy for every run. By default a copy outlives its run: the next "
        "run at the same load paces its checkpoints at its own interval, no cluster start, no submission (~30 s "
        "each).")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the job's last profile (its settings).")] = False,
    profile: Annotated[str | None, typer.Option(help="With --resume: the profile id.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan and the first configurations only.")] = False,
    db: Db = None,
    stack_dir: StackDir = None,
    as_json: AsJson = False,
) -> None:
    """Profile copies of the job on clusters of their own; the live job, its topics and output are untouched."""
    began = time.monotonic()  # the budget counts from here: recording the input is part of the profile's time
    from chronos.cli import wiring
    from chronos.cli.input_recording import record_input
    from chronos.profiler.copies import live_inputs
    from chronos.profiler.event_time import EventTimeFields
    from chronos.profiler.headroom import copies_for
    from chronos.profiler.profile import ProfileLimits, check_budget, run_profile
    from chronos.profiler.replay import check_event_time
    from chronos.profiler.run import RunPlan, check_profilable
    from chronos.profiler.settings import ProfileSettings
    from chronos.profiler.store import latest_profile
    from chronos.profiler.study import ProfileSpace, ProfileStudy, QosTargets, design_size
    from chronos.stack.known_jobs import chronos_job, job_io, running_job_named
    from chronos.stack.profiling_clusters import available_memory_gib, check_capacity

    with contextlib.ExitStack() as cleanup:  # whatever ends the profile, the live watch ends with it
        sd = stack_dir_of(stack_dir)
        state = wiring.require_stack(sd)
        store = wiring.profile_store(_db(sd, db))
        sample: InputSample | None = None
        watcher: LiveWatcher | None = None
        meter = wiring.host_meter(sd)
        meter.start()  # the host's idle CPU, from now until the first copy (`--parallel auto`)
        if resume:
            profile_id, settings = latest_profile(store, profile)
            if settings.sample_profile is not None:
                sample = _stored_sample(store, settings.sample_profile)
            input_said = _input_said(settings.sample_profile, profile_id)
            if not dry_run:
                with wiring.flink_client(sd, None) as client:
                    live = running_job_named(client, wiring.job_records(sd), settings.spec.name)
                if live is None:
                    err.print(f"no running job {settings.spec.name} submitted by chronos here: the live job is not "
                              "watched while this profile runs", highlight=False)
                else:
                    watcher = _watch(cleanup, lambda: wiring.live_watcher(sd, live))
        else:
            with wiring.flink_client(sd, None, patient=True) as client:
                job_record = chronos_job(client, wiring.job_records(sd), job)
            # Read from now on: the minutes of recording the input are the live job's "before".
            watcher = None if dry_run else _watch(cleanup, lambda: wiring.live_watcher(sd, job_record))
            spec = job_record.spec
            check_profilable(spec)  # before minutes of recording, before any cluster starts
            lo, hi = _interval_range(intervals)
            profile_id = f"{path_safe(spec.name)}-{time.strftime('%Y%m%d-%H%M%S')}"
            sample_profile: str | None = None
            if spec.copy_vars:  # a job described by its job file: its copies replay its own input
                sample_profile = _sample_source(store, spec.name, replay) or profile_id
                input_said = _input_said(sample_profile, profile_id, record)
                if dry_run and sample_profile == profile_id:
                    workload = _given_rate(trace, rate) or TraceRate((0.0,), (0.0,))
                else:
                    sample = (_stored_sample(store, sample_profile) if sample_profile != profile_id else
                              record_input(state, live_inputs(spec), parse_interval_ms(record) / 1000, seed, err,
                                           job_io(job_record).kafka))
                    foreign = sorted(set(sample.topics) - set(live_inputs(spec)))
                    if foreign:
                        raise InvalidInput(f"the sample of profile {sample_profile} was recorded from {', '.join(foreign)}, "
                                           f"which job {spec.name} does not read")
                    check_event_time(EventTimeFields(spec.event_time_fields), sample)
                    workload = _given_rate(trace, rate) or sample.trace
            else:
                if replay is not None:
                    raise InvalidInput(f"--sample replays a job's recorded input; job {spec.name} has no copy: section in "
                                       "a job file, so its copies are fed generated vehicle events")
                input_said = "generated vehicle events"
                workload = _given_rate(trace, rate) or _recorded_rate(state, job_record, record)
            variants = _explored_recovery(sd, state) if explore_recovery else ()
            settings = ProfileSettings(
                recovery_variants=variants,
                spec=spec, workload=(workload.times_s, workload.rates), interval_min_s=lo, interval_max_s=hi,
                loads=_scales(loads), faults=faults, repeats=repeats, steady_s=parse_interval_ms(steady) / 1000,
                seed=seed,
                warmup_s=_seconds_or_none(warmup), hold_s=parse_interval_ms(hold) / 1000,
                timeout_s=parse_interval_ms(timeout) / 1000, max_recovery_s=parse_interval_ms(max_recovery) / 1000,
                max_p99_ms=parse_interval_ms(max_p99), sample_profile=sample_profile,
                timestamp_field=job_io(job_record).timestamp_field,
            )
        spec = settings.spec
        check_profilable(spec)
        extra_taskmanagers = max((v.spare_taskmanagers for v in settings.variants()), default=0)
        auto, most = _parallel(parallel, extra_taskmanagers)
        plan = RunPlan(profile_id, spec, settings.trace, faults=settings.faults, repeats=settings.repeats,
                       steady_s=settings.steady_s,
                       warmup_s=settings.warmup_s, hold_s=settings.hold_s, timeout_s=settings.timeout_s, sample=sample,
                       timestamp_field=settings.timestamp_field, recovery_variants=settings.variants(),
                       reuse_copies=not copy_per_run)
        space = ProfileSpace(settings.interval_min_s, settings.interval_max_s, settings.loads,
                             initial_design=design_size(most, len(settings.loads)),
                             recovery=("live", *(v.name for v in settings.variants())))
        targets = QosTargets(settings.max_recovery_s, settings.max_p99_ms)
        limits = ProfileLimits(most, runs, parse_interval_ms(budget) / 1000 if budget else None)
        check_capacity(most, available_memory_gib(), extra_taskmanagers=extra_taskmanagers)
        check_budget(plan, limits, space.interval_min_s)
        if dry_run:
            _say_plan(profile_id, store.path, plan, space, targets, limits, settings.seed, input_said, auto, as_json)
            return
        if not resume:
            store.create_profile(profile_id, spec.name, int(time.time() * 1000), settings.to_json())
            if sample is not None and settings.sample_profile == profile_id:
                store.save_sample(profile_id, spec.name, int(time.time() * 1000), sample)
        if sample is not None:
            err.print(f"input: {input_said}: {len(sample.records):,} records"
                      + (f" (a uniform share of {sample.seen:,})" if sample.seen > len(sample.records) else "")
                      + f" over {sample.window_s:g} s, {len(sample.key_shares(10**9)):,} keys", highlight=False)
        study = ProfileStudy(f"sqlite:///{store.path}", profile_id, space, settings.seed)
        pool = wiring.profiling_pool(sd, profile_id, state, slots=spec.parallelism or 1,
                                     clusters_at_once=clusters_at_once or max(2, most))
        if not as_json:
            err.print(f"copies run at OS priority nice {pool.niceness}, the live cluster's at 0: on this host they take "
                      "the CPU the live job leaves", highlight=False)
        columns = (TextColumn("{task.description}", markup=False), BarColumn(),  # a run's phase can hold Flink's words
                   TextColumn("{task.fields[count]}", markup=False), TimeElapsedColumn(),
                   TextColumn("{task.fields[status]}", markup=False))
        with (graceful_stop(err.print, "stopping: the runs in flight clean up their clusters (Ctrl-C again to abandon "
                                       "them)") as stop,
              Progress(*columns, console=err, transient=False, disable=as_json) as progress):
            total = progress.add_task(f"profile {profile_id}", total=runs, status="", count=f"0/{runs or '-'} runs")
            pool.waiting = lambda line: err.print(line, highlight=False, markup=False)
            pool.interrupted = stop.is_set
            _await_band(watcher, meter, progress, total, stop)
            if watcher is not None:
                watcher.begin_profile()
            if auto:
                choice = copies_for(meter.read(), most)
                limits = replace(limits, parallel=choice.parallel)
                err.print(f"runs at a time: {choice.why}", highlight=False)
            slots = [progress.add_task(f"run {i + 1}: waiting", total=None, status="", count="")
                     for i in range(limits.parallel)]
            progress.update(total, status="")
            started_ms = int(time.time() * 1000)
            if limits.budget_s is not None:  # what recording, the live job's band and the host's reading took
                limits = replace(limits, budget_s=max(0.0, limits.budget_s - (time.monotonic() - began)))
            outcome = run_profile(plan, study, store, pool, limits, targets, stop=stop,
                                  events=_Bars(progress, total, slots, runs),
                                  guard=watcher.verdict if watcher is not None else None)
        impact = watcher.impact(outcome.pauses, outcome.paused_s) if watcher is not None else None
        if impact is not None:
            store.save_live_impact(profile_id, started_ms, impact, pool.niceness)
        _say_outcome(profile_id, store.path, outcome, impact, limits.parallel, as_json)


def _seconds_or_none(text: str) -> float:
    """A duration that may be nothing at all ("0", "0s")."""
    return 0.0 if text.strip().rstrip("ms").strip() in ("0", "0.0", "") else parse_interval_ms(text) / 1000


BEFORE_MAX_S = 30.0  # the longest a profile waits to learn the live job's band before its first copy
HOST_WINDOW_S = 5.0  # the shortest window the host's idle CPU is measured over (`--parallel auto`)


def _parallel(text: str, extra_taskmanagers: int) -> tuple[bool, int]:
    """(auto, the most runs at a time): a number as given, or 'auto' up to AUTO_MOST as the memory allows."""
    from chronos.profiler.headroom import AUTO_MOST
    from chronos.stack.profiling_clusters import GIB_PER_CLUSTER, available_memory_gib

    if text.strip().lower() == "auto":
        fits = int(available_memory_gib() // (GIB_PER_CLUSTER + 1.5 * extra_taskmanagers))
        return True, max(1, min(AUTO_MOST, fits))
    try:
        return False, int(text)
    except ValueError:
        raise InvalidInput(f"invalid --parallel {text!r}: a number of runs at a time, or 'auto'") from None


def _watch(cleanup: contextlib.ExitStack, make: Callable[[], LiveWatcher]) -> LiveWatcher | None:
    """The live job's watch, closed with the profile; one that cannot start is said, and the profile goes on
    without it (its readings guard the live job, they are not what the profile measures)."""
    try:
        watcher = make()
    except (ChronosError, OSError) as exc:
        err.print(f"the live job cannot be watched while profiled ({shown(str(exc))}): no band, no impact measured",
                  highlight=False)
        return None
    cleanup.callback(watcher.close)
    watcher.start()
    return watcher


def _await_band(watcher: LiveWatcher | None, meter: HostMeter, progress: Progress, task: TaskID,
                stop: threading.Event) -> None:
    """Until the live job's band is known (or BEFORE_MAX_S has passed) and the host has been measured for
    HOST_WINDOW_S: no copy starts before its baseline."""
    deadline = time.monotonic() + BEFORE_MAX_S
    while (((watcher is not None and not watcher.band_ready()) or meter.elapsed_s < HOST_WINDOW_S)
           and time.monotonic() < deadline and not stop.is_set()):
        progress.update(task, status="reading the live job and the host before the first copy starts")
        stop.wait(1.0)


def _live_said(live: LiveImpact) -> str:
    def fig(value: float | None, unit: str) -> str:
        return "not measured" if value is None else f"{value:,.0f} {unit}"

    change = live.p99_change
    return (f"live job while profiled: p99 {fig(live.p99_before_ms, 'ms')} before, {fig(live.p99_during_ms, 'ms')} "
            "while the copies ran" + ("" if change is None else f" ({change:+.0%}"
                                      + ("" if live.within_tolerance else f", over the {TOLERANCE:.0%} allowed") + ")")
            + f"; throughput {fig(live.throughput_before, 'ev/s')} before, {fig(live.throughput_during, 'ev/s')} while"
            + (f"; {live.pauses} run(s) held back {live.paused_s:.0f} s while it was out of its band"
               if live.pauses else ""))


def _given_rate(trace: Path | None, rate: float | None) -> TraceRate | None:
    """The workload's rate when given: a trace file or a constant rate."""
    from chronos.rates import load_trace

    if trace is not None:
        return load_trace(trace)
    if rate is not None:
        if rate <= 0:
            raise InvalidInput("--rate must be positive")
        return TraceRate((0.0,), (rate,))
    return None


def _recorded_rate(state: StackState, record: JobRecord, window: str) -> TraceRate:
    from chronos.cli.input_recording import record_workload

    return record_workload(state, record, parse_interval_ms(window) / 1000, err)


def _sample_source(store: ProfileStore, job_name: str, replay: str | None) -> str | None:
    """Whose stored sample `--sample` names ('last': this job's newest); None: record one."""
    if replay is None:
        return None
    if replay == "last":
        found = store.latest_sample_profile(job_name)
        if found is None:
            raise InvalidInput(f"no input sample of job {job_name} is stored in {store.path}; record one (--record)")
        return found
    return replay


def _stored_sample(store: ProfileStore, profile_id: str) -> InputSample:
    sample = store.sample(profile_id)
    if sample is None:
        raise InvalidInput(f"no input sample is stored with profile {profile_id} in {store.path}")
    return sample


def _input_said(sample_profile: str | None, profile_id: str, record: str = "") -> str:
    if sample_profile is None:
        return "generated vehicle events"
    if sample_profile == profile_id:
        return f"the job's own input, recorded{f' for {record}' if record else ''} and replayed"
    return f"the job's own input, replayed from the sample of profile {sample_profile}"


def _explored_recovery(sd: Path, state: StackState) -> tuple[tuple[str, tuple[tuple[str, str], ...], int], ...]:
    """The proposal `chronos recommend` would make for the live cluster, as a recovery variant to profile; none when
    the live cluster already runs it."""
    from chronos.cli import wiring

    with wiring.flink_client(sd, None, patient=True) as client, err.status("measuring pauses on the live TaskManagers (10 s)"):
        proposed = wiring.recovery_proposal(client, sd, None, 10.0)
    proposal, lines = proposed.proposal, proposed.lines
    if not proposal.changes:
        err.print("--explore-recovery: the live cluster already runs the settings chronos proposes; profiling them only")
        return ()
    spare = max(state.spare_taskmanagers, proposal.spare_taskmanagers)
    err.print("exploring recovery settings: " + "; ".join(f"{c.what} {c.now} -> {c.proposed}" for c in proposal.changes),
              highlight=False)
    return (("proposed", tuple(lines.as_dict().items()), spare),)


def _say_plan(profile_id: str, db: Path, plan: RunPlan, space: ProfileSpace, targets: QosTargets,
              limits: ProfileLimits, seed: int, input_said: str, auto: bool, as_json: bool) -> None:
    from chronos.profiler.study import space_filling_design

    first = space_filling_design(space, space.initial_design, seed)
    mean = sum(plan.workload.rates) / len(plan.workload.rates)
    summary = {"profile_id": profile_id, "db": str(db), "input": input_said,
               "workload_mean_rate": mean if mean > 0 else None, "space": asdict(space), "targets": asdict(targets),
               "limits": asdict(limits), "parallel": f"auto: at most {limits.parallel}, as the host's idle CPU "
               "holds when the profile starts" if auto else limits.parallel,
               "copies": "kept between runs at the same load: each run paces its worker's copy at its interval"
               if plan.reuse_copies else "a cluster and a copy per run (--copy-per-run)",
               "first_configurations": [asdict(c) for c in first],
               "estimated_run_s": [round(plan.estimate_s(c.interval_ms / 1000, n, copy_running=plan.reuse_copies
                                                         and n >= limits.parallel)) for n, c in enumerate(first)]}
    if as_json:
        print_json(summary)
    else:
        for key, value in summary.items():
            out.print(f"{key:22} {value}", highlight=False)


def _say_outcome(profile_id: str, db: Path, outcome: ProfileOutcome, live: LiveImpact | None, parallel: int,
                 as_json: bool) -> None:
    if as_json:
        print_json({"profile_id": profile_id, "db": str(db), **asdict(outcome), "parallel": parallel,
                    "live": None if live is None else {**asdict(live), "p99_change": live.p99_change}})
    else:
        copies = f" on {outcome.copies} cop{'y' if outcome.copies == 1 else 'ies'}" if outcome.copies else ""
        out.print(f"profile {profile_id}: {outcome.completed} runs completed, {outcome.failed} failed{copies} in "
                  f"{outcome.elapsed_s / 60:.1f} min" + (" (stopped: `--resume` continues it)" if outcome.interrupted else ""))
        if live is not None:
            out.print(_live_said(live), highlight=False)
        out.print(f"report: chronos profile report --profile {profile_id}")
    if outcome.interrupted:
        raise typer.Exit(130)


@profile_app.command("report")
def profile_report(
    profile: Annotated[str | None, typer.Option(help="Profile id \\[default: the last one].")] = None,
    plots: Annotated[Path | None, typer.Option(help="Write recovery and p99 plots (PNG) into this directory.")] = None,
    db: Db = None,
    stack_dir: StackDir = None,
    models: Annotated[bool, typer.Option(
        "--models", help="Also fit the recovery and p99 models and say each family's held-out error "
        "(takes seconds to a minute).")] = False,
    as_json: AsJson = False,
) -> None:
    """The profile's runs as a table (or JSON), plots of recovery time and p99 against interval, every run's
    recoveries by phase (measured, and predicted by the phase model fitted on the other runs), and with
    --models the models' held-out errors."""
    from chronos.cli import wiring
    from chronos.profiler.report import phase_rows, plot_profile, report_rows
    from chronos.profiler.store import latest_profile

    if plots is not None:
        output_directory(plots, "--plots")
    store = wiring.profile_store(_db(stack_dir_of(stack_dir), db), must_exist=True)
    profile_id, settings = latest_profile(store, profile)
    runs = store.runs(profile_id)
    rows = report_rows(runs)
    phases = phase_rows(runs)
    written = plot_profile(rows, plots) if plots else []
    fits = _model_fits(runs, settings.spec.commits_on_checkpoint) if models else {}
    impacts = store.live_impacts(profile_id)
    if as_json:
        print_json({"profile_id": profile_id, "runs": [asdict(r) for r in rows],
                    "phases": [asdict(r) for r in phases], "models": {k: asdict(v) for k, v in fits.items()},
                    "plots": [str(p) for p in written],
                    "live": [{"started_ms": at, "copy_niceness": niceness, **asdict(live), "p99_change": live.p99_change}
                             for at, live, niceness in impacts]})
        return

    def num(value: float | None, fmt: str = ",.0f") -> str:
        return "-" if value is None else format(value, fmt)

    explored = len({r.recovery for r in rows}) > 1
    table = Table("trial", "interval s", "load", *(("recovery",) if explored else ()), "ev/s", "status",
                  "throughput", "p50 ms", "p99 ms", "ckpt ms", "ckpt KiB", "TM cpu %", "recovery s", "replayed",
                  title=f"profile {profile_id}", title_justify="left")
    for r in rows:
        recovery = num(r.recovery_s, ".1f") + (f" ({r.not_recovered} NOT)" if r.not_recovered else "")
        table.add_row(str(r.trial), f"{r.interval_s:g}", f"x{r.load_scale:g}", *((r.recovery,) if explored else ()),
                      num(r.load_rate), r.status,
                      num(r.throughput), num(r.p50_ms),
                      num(r.p99_ms) + "".join(f" (again {a:,.0f})" for a in r.p99_again_ms),
                      num(r.checkpoint_ms), num(r.checkpoint_kib),
                      num(r.cpu_pct), recovery, num(r.replayed))
    out.print(table)
    if phases:
        out.print(_phase_table(phases))
    for at, live, niceness in impacts:
        out.print(f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(at / 1000))}, copies at nice {niceness}: "
                  + _live_said(live), highlight=False)
    for what, fit in fits.items():
        out.print(f"{what} model: {fit.family}, held-out error {fit.held_out_mape:.0%} ("
                  + ", ".join(f"{name} {mape:.0%}" for name, mape in fit.mape_by_family) + ")"
                  + (f"; set aside, as they predict it falling with the interval or the load: "
                     f"{', '.join(fit.falling)}" if fit.falling and fit.family not in fit.falling else "")
                  + ("; every family's predictions fall with the interval or the load: the data does not say how "
                     "it grows" if fit.family in fit.falling else "")
                  + f"; {_trust(fit)}")
    for path in written:
        out.print(f"plot: {path}")


def _trust(fit: FitReport) -> str:
    """The held-out error against what the data allows, and whether the intervals cover what they claim."""
    from chronos.optimizer.model_trust import at_noise_floor

    floor = ("no setting measured twice: repeat-noise floor unknown" if fit.noise_floor_mape is None
             else f"repeat-noise floor {fit.noise_floor_mape:.0%}"
             + (": at the floor, as good as the measurements allow" if at_noise_floor(fit.held_out_mape,
                                                                                      fit.noise_floor_mape)
                else ": above the floor"))
    cover = (f"too few points to check its {fit.coverage:.0%} intervals" if fit.held_out_coverage is None
             else f"its {fit.coverage:.0%} intervals covered {fit.held_out_coverage:.0%} held out")
    return f"{floor}; {cover}"


def _phase_table(phases: Sequence[PhaseRow]) -> Table:
    table = Table("trial", "interval s", "recovery", "ev/s", "faults", "detect s", "reschedule s", "catch-up s",
                  "total s",
                  title="recovery by phase: measured / predicted (phase model fitted on the other runs)",
                  title_justify="left")
    for r in phases:
        table.add_row(str(r.trial), f"{r.interval_s:g}", r.recovery, f"{r.load_rate:,.0f}", str(r.recoveries),
                      *(f"{getattr(r.measured, k):.1f} / {getattr(r.predicted, k):.1f}"
                        for k in ("detect_s", "reschedule_s", "catchup_s", "total_s")))
    return table


def _model_fits(runs: Sequence[ProfileRun], latency_rising: bool) -> dict[str, FitReport]:
    """Every family cross-validated on the profile (the phase law among them for recovery, at the job's
    capacity; recovery fitted rising, and p99 too for output committed on checkpoints, as the tuner fits them);
    fewer than 4 points: no model."""
    from chronos.optimizer.models import fit_best
    from chronos.profiler.observations import profile_observations

    observed = profile_observations(runs)
    fits = {}
    with out.status("fitting the models"):
        for what, points, capacity, rising in (("recovery", observed.recovery, observed.capacity, True),
                                               ("p99", observed.latency, None, latency_rising)):
            if len(points) >= 4:
                fits[what] = fit_best(points, seed=0, capacity=capacity, rising=rising).report
    return fits
