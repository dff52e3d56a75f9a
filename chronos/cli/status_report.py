"""`chronos status`: one row of facts per job, from Flink REST and the latency observer."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from chronos.errors import ChronosError
from chronos.flink.replies import CheckpointStats
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.observer import read_snapshot
from chronos.stack.helpers import helper_dir


@dataclass(frozen=True)
class JobStatusReport:
    job_id: str
    name: str
    state: str
    interval_ms: int | None
    completed_checkpoints: int
    failed_checkpoints: int
    failed_why: str | None  # what the failures were, in words: a count alone reads as a fault
    last_checkpoint_ms: int | None
    last_checkpoint_bytes: int | None
    restored_from: str | None
    source_records_per_s: float | None  # Flink's meter: a mean over its last 60 s, low on a young job
    input_events_per_s: float | None  # the input topic's end offsets over the window below
    input_rate_window_s: float | None
    p99_latency_ms: float | None
    p50_latency_ms: float | None
    measured_interval_s: float | None = None  # median gap between the recent completed checkpoints' triggers
    paced_ms: int | None = None  # the cadence a `chronos tune` journaled for this job (None: not paced)
    realizer: str = "restart"  # how `chronos tune` changes its interval: paced (checkpoints triggered) or restart
    realizer_why: str = ""  # why that one, in words
    suggested_tune: str | None = None  # a `chronos tune` whose targets the job meets as it runs now (None: no p99 yet)


InputRate = Callable[[str], "tuple[float, float] | None"]  # job id -> (events/s, over this many s), if known


def no_input_rate(job_id: str) -> tuple[float, float] | None:
    return None


PacedAt = Callable[[str, str], "int | None"]  # (job id, job name) -> the journaled cadence in ms, if paced


def not_paced(job_id: str, name: str) -> int | None:
    return None


def measured_interval_s(stats: CheckpointStats) -> float | None:
    """What the job checkpoints at, paced or not: the median gap between its recent completed checkpoints."""
    times = sorted(e.trigger_timestamp for e in stats.history if e.status == "COMPLETED" and not e.is_savepoint)
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(times)]
    return round(statistics.median(gaps), 2) if gaps else None


def collect_status(client: FlinkRestClient, job_id: str | None, stack_dir: Path, wall_s: float,
                   input_rate: InputRate = no_input_rate, paced_at: PacedAt = not_paced) -> list[JobStatusReport]:
    if job_id is not None:
        ids = [job_id]
        client.job(job_id)  # an unknown id fails here, with its own message
    else:
        ids = [j.jid for j in client.jobs() if j.state in {"RUNNING", "RESTARTING", "CREATED", "INITIALIZING"}]
    latency = read_snapshot(helper_dir(stack_dir) / "latency.json", max_age_s=10.0, wall_s=wall_s)
    reports = []
    for jid in ids:
        detail = client.job(jid)
        stats = client.checkpoints(jid)
        try:
            interval: int | None = client.checkpoint_config(jid).interval
        except ChronosError:
            interval = None  # a job without checkpointing has no config to show
        try:
            throughput = client.source_throughput(jid) if detail.state == "RUNNING" else None
        except ChronosError:
            throughput = None
        completed = stats.latest.completed
        restored = stats.latest.restored
        measured = input_rate(jid) if detail.state == "RUNNING" else None
        paced = paced_at(jid, detail.name)
        realizer, realizer_why = realizer_of(client, jid, paced) if detail.state == "RUNNING" else ("restart", "")
        reports.append(JobStatusReport(
            job_id=jid, name=detail.name, state=detail.state, interval_ms=interval,
            completed_checkpoints=stats.counts.completed, failed_checkpoints=stats.counts.failed,
            failed_why=failed_why(stats),
            last_checkpoint_ms=completed.end_to_end_duration if completed and completed.end_to_end_duration >= 0 else None,
            last_checkpoint_bytes=completed.state_size if completed and completed.state_size >= 0 else None,
            restored_from=restored.external_path if restored else None,
            source_records_per_s=throughput,
            input_events_per_s=measured[0] if measured else None,
            input_rate_window_s=measured[1] if measured else None,
            p99_latency_ms=latency.p99_ms if latency else None,
            p50_latency_ms=latency.p50_ms if latency else None,
            measured_interval_s=measured_interval_s(stats),
            paced_ms=paced,
            realizer=realizer, realizer_why=realizer_why,
            suggested_tune=suggested_tune(latency.p99_ms if latency else None, interval),
        ))
    return reports


class TriggerProbe(Protocol):
    def offers_checkpoint_trigger(self, job_id: str) -> bool: ...


def suggested_tune(p99_ms: float | None, interval_ms: int | None) -> str | None:
    """Targets a first `chronos tune` can meet: half again the p99 the job shows now (its windows and the checkpoint
    its exactly-once output waits for are in it: the demo's is ~12 s at a 10 s interval, so a 1 s target is out of
    reach at any interval), and a recovery of a minute, or three intervals where those are longer (one is replayed,
    and detection and restart come on top). None until a p99 is measured."""
    if p99_ms is None or p99_ms <= 0:
        return None
    latency_s = max(1, math.ceil(1.5 * p99_ms / 1000))
    recovery_s = max(60, math.ceil(3 * (interval_ms or 0) / 1000))
    return f"chronos tune --latency-p99 {latency_s}s --recovery {recovery_s}s"


def realizer_of(client: TriggerProbe, job_id: str, paced_ms: int | None) -> tuple[str, str]:
    """What `chronos tune` does to this job, and why: a job no tuner paces now is still paced by the next one where
    the cluster triggers checkpoints on request (its default, --realize auto)."""
    if paced_ms:
        return "paced", f"chronos tune holds its checkpoints at {paced_ms / 1000:g} s, no restart"
    try:
        offered = client.offers_checkpoint_trigger(job_id)
    except ChronosError:
        return "restart", "not known: the cluster did not answer whether it triggers checkpoints"
    if offered:
        return "paced", ("`chronos tune` would trigger its checkpoints at the cadence it chooses, no restart (the "
                         "cluster triggers checkpoints on request); no tuner paces it now, so it checkpoints at its "
                         "own interval")
    return "restart", ("the cluster has no checkpoint trigger endpoint (Flink < 1.17): `chronos tune` changes the "
                       "interval by stop-with-savepoint and resubmit")


def failed_why(stats: CheckpointStats) -> str | None:
    """Why checkpoints failed, as far as Flink says. A failure with no statistics of its own is one Flink
    never started: its trigger found the job's tasks not all running yet (the first trigger of every
    young job does), nothing was lost. One with statistics has a message: the latest is shown."""
    if not stats.counts.failed:
        return None
    latest = stats.latest.failed
    if latest is None or not latest.failure_message:
        return "not started: the job's tasks were not all running yet (normal right after a start)"
    return f"latest #{latest.id}: {' '.join(latest.failure_message.split())[:160]}"
