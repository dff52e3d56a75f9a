"""Stop a job with a savepoint and start it again with new checkpoint settings.

The savepoint path is handed to `on_savepoint` the moment it exists, before resubmission, so a
caller can journal it: if the process dies between the two steps the job is stopped but its state is
on record and the restart can be redone from that path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import JobSubmitter
from chronos.model import CheckpointSettings, JobSpec


@dataclass(frozen=True)
class RestartResult:
    old_job_id: str
    new_job_id: str
    savepoint: str
    savepoint_s: float  # stop request -> savepoint complete
    submitted_s: float  # stop request -> new job id returned
    running_s: float  # stop request -> every task of the new job RUNNING


def _noop(_: str) -> None:
    return None


def restart_with_settings(
    client: FlinkRestClient,
    submitter: JobSubmitter,
    job_id: str,
    spec: JobSpec,
    settings: CheckpointSettings,
    savepoint_dir: Path,
    on_savepoint: Callable[[str], None] = _noop,
    clock: Callable[[], float] = time.monotonic,
    running_timeout_s: float = 180.0,
) -> RestartResult:
    start = clock()
    savepoint = client.stop_with_savepoint(job_id, savepoint_dir)
    savepoint_s = clock() - start
    on_savepoint(savepoint)
    new_job = submitter.submit(spec, settings, savepoint)
    submitted_s = clock() - start
    client.wait_until_running(new_job, timeout_s=running_timeout_s)
    return RestartResult(job_id, new_job, savepoint, savepoint_s, submitted_s, clock() - start)
