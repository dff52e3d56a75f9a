"""The tuner's view of a Flink job over REST: the JobControl protocol of `chronos.tune.retune`."""

from __future__ import annotations

from pathlib import Path

from chronos.errors import UnknownJob
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import JobSubmitter
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobSpec


class RestJobControl:
    def __init__(self, client: FlinkRestClient, submitter: JobSubmitter, savepoint_dir: Path) -> None:
        self._client = client
        self._submitter = submitter
        self._savepoint_dir = savepoint_dir

    def state(self, job_id: str) -> str:
        try:
            return self._client.job(job_id).state
        except UnknownJob:
            return "UNKNOWN"

    def stop_with_savepoint(self, job_id: str) -> str:
        return self._client.stop_with_savepoint(job_id, self._savepoint_dir)

    def savepoint_of(self, job_id: str) -> str | None:
        latest = self._client.checkpoints(job_id).latest.savepoint
        return latest.external_path if latest else None

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str) -> str:
        return self._submitter.submit(spec, settings, savepoint)

    def wait_until_running(self, job_id: str, timeout_s: float) -> None:
        self._client.wait_until_running(job_id, timeout_s=timeout_s)

    def interval_ms(self, job_id: str) -> int:
        return self._client.checkpoint_config(job_id).interval

    def live_jobs(self, name: str) -> list[tuple[str, int]]:
        return [(j.jid, j.start_time) for j in self._client.jobs() if j.name == name and j.state not in TERMINAL_STATES]
