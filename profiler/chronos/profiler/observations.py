"""A profile's runs as the points the tuner's models are fitted on (completed runs only; a run that could
not measure something contributes nothing to that model). Recovery comes from the runs at the live cluster's
recovery settings alone: a run at other heartbeats or with a spare TaskManager recovered otherwise than the live
job would (what those runs teach goes to the phase model, which sees the settings); steady latency and
checkpoint cost do not depend on them, so every run counts there."""

from __future__ import annotations

from collections.abc import Sequence

from chronos.optimizer.model_values import Observation, ProfileObservations
from chronos.optimizer.phase_observations import ProfiledRecovery, job_capacity
from chronos.profiler.records import LIVE, ProfileRun
from chronos.profiler.store import ProfileStore


def job_observations(store: ProfileStore, job_name: str) -> ProfileObservations:
    """The points of every profile of this job in the store."""
    return profile_observations([run for profile in store.profiles() if profile[1] == job_name
                                 for run in store.runs(profile[0])])


def profiled_recoveries(store: ProfileStore) -> list[ProfiledRecovery]:
    """Every recovery measured in the store's profiles, with the load and checkpointed state of its run."""
    return [ProfiledRecovery(job_name, m, run.load_rate, (run.steady.checkpoint_size_bytes or 0.0) if run.steady else 0.0)
            for profile_id, job_name, *_ in store.profiles() for run in store.runs(profile_id) for m in run.recoveries]


def profile_observations(runs: Sequence[ProfileRun]) -> ProfileObservations:
    recovery, latency, checkpoint = [], [], []
    for run in runs:
        if run.status != "completed":
            continue
        interval_s = run.config.interval_ms / 1000
        if run.config.recovery == LIVE:
            recovery += [Observation(interval_s, run.load_rate, m.recovery_s) for m in run.recoveries
                         if m.recovery_s is not None]
        for steady in (run.steady, *run.repeat_steady):  # a window measured again is a repeat at the run's setting
            if steady is not None and steady.p99_ms is not None:
                latency.append(Observation(interval_s, run.load_rate, steady.p99_ms))
            if steady is not None and steady.checkpoint_duration_ms:
                checkpoint.append(Observation(interval_s, run.load_rate, steady.checkpoint_duration_ms / 1000))
    capacity = job_capacity([m for run in runs if run.status == "completed" and run.config.recovery == LIVE
                             for m in run.recoveries])
    return ProfileObservations(tuple(recovery), tuple(latency), tuple(checkpoint), capacity)
