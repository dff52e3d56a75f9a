"""The tuner's view of a Flink job over REST: the JobControl protocol of `chronos.tune.retune`, and the
CheckpointTrigger protocol of `chronos.tune.pacer`."""

from __future__ import annotations

import re
from pathlib import Path

from chronos.clock import wall_ms
from chronos.errors import UnknownJob
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import JobSubmitter
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobSpec
from chronos.tune.pacer import TriggerOutcome
from chronos.tune.pacing import PacingView


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


class RestCheckpointTrigger:
    """Pacing over REST (`POST /jobs/:jobid/checkpoints`, FLINK-27101): the CheckpointTrigger protocol of
    `chronos.tune.pacer`. Needs nothing but the client, so a FlinkDeployment's REST service paces the same way."""

    def __init__(self, client: FlinkRestClient) -> None:
        self._client = client

    def offers_checkpoint_trigger(self, job_id: str) -> bool:
        return self._client.offers_checkpoint_trigger(job_id)

    def pacing_view(self, job_id: str) -> PacingView:
        at = wall_ms()
        stats = self._client.checkpoints(job_id)
        completed = stats.latest.completed
        running = self._client.job(job_id).all_running
        restored = stats.latest.restored
        return PacingView(at, running, stats.counts.in_progress, completed.id if completed else None,
                          completed.trigger_timestamp if completed else None,
                          restored.restore_timestamp if restored else None)

    def trigger_checkpoint(self, job_id: str) -> str:
        return self._client.trigger_checkpoint(job_id)

    def trigger_outcome(self, job_id: str, trigger_id: str) -> TriggerOutcome:
        try:
            reply = self._client.checkpoint_trigger(job_id, trigger_id)
        except UnknownJob:  # the job, or only the trigger (JobManager failover, results expired): either way gone
            return TriggerOutcome("failed", failure="Flink no longer knows this trigger")
        if reply.status.id != "COMPLETED":
            return TriggerOutcome("in-progress")
        operation = reply.operation
        if operation is None or operation.checkpoint_id is None:
            cause = (operation.failure_cause or {}) if operation else {}
            return TriggerOutcome("failed", failure=_reason(str(cause.get("stack-trace") or cause.get("class") or "")))
        return TriggerOutcome("completed", checkpoint_id=operation.checkpoint_id)


def _reason(stack_trace: str) -> str:
    """The words of a failure's first line without its chain of exception class names ("...Exception: ")."""
    line = stack_trace.strip().splitlines()[0] if stack_trace.strip() else "no cause given"
    if "Failure reason: " in line:
        return line.split("Failure reason: ", 1)[1][:300]
    return re.split(r"\b[\w.$]+(?:Exception|Error): ", line)[-1][:300] or line[:300]
