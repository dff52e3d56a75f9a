"""A profile's runs as the points the tuner's models are fitted on (completed runs only; a run that could
not measure something contributes nothing to that model). Recovery comes from the runs at the live cluster's
recovery settings alone: a run at other heartbeats or with a spare TaskManager recovered otherwise than the live
job would (what those runs teach goes to the phase model, which sees the settings); steady latency and
checkpoint cost do not depend on them, so every run counts there."""

from __future__ import annotations

from collections.abc import Sequence

from chronos.optimizer.model_values import Observation, ProfileObservations
from chronos.optimizer.phase_observations import job_capacity
from chronos.profiler.records import LIVE, ProfileRun


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
