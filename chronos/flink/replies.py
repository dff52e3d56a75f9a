"""Typed views of the Flink REST replies chronos reads (Flink 2.3), parsed at the boundary.

Only the fields chronos uses are declared; unknown fields are ignored so newer Flink versions still
parse. Field names follow Flink's JSON through aliases.

Every number is bounded and every id that becomes a URL path or a file name has Flink's form: a reply with
a 400-digit duration (an OverflowError in `job list` once), a negative size or a job id with a newline is
refused here, in one line, rather than met later. Flink writes -1 where it knows no value yet (a running
job's end time, an in-flight checkpoint's duration): that passes, and is shown as unknown.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

LARGEST = 2**53  # the largest integer a JSON reader keeps exact: epoch ms for 285,000 years, 8 PiB
Count = Annotated[int, Field(ge=0, le=LARGEST)]
Millis = Annotated[int, Field(ge=-1, le=LARGEST)]  # a duration or an epoch time in ms; -1: not known (Flink's)
Bytes = Annotated[int, Field(ge=-1, le=LARGEST)]  # a size; -1: not known (Flink's)
JOB_ID_PATTERN = r"^[0-9a-f]{32}$"  # a job id becomes a URL path and a file name: nothing else passes
JobId = Annotated[str, Field(pattern=JOB_ID_PATTERN)]
VertexId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]  # Flink: 32 hex digits; a URL path
TaskManagerId = Annotated[str, Field(pattern=r"^[A-Za-z0-9._:-]{1,256}$")]  # "127.0.0.1:38765-a1b2c3": a URL path


class _Reply(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore", allow_inf_nan=False)


class ClusterOverview(_Reply):
    flink_version: str = Field(alias="flink-version", max_length=64)
    taskmanagers: Count
    slots_total: Count = Field(alias="slots-total")
    slots_available: Count = Field(alias="slots-available")
    jobs_running: Count = Field(alias="jobs-running")


class TaskManager(_Reply):
    id: TaskManagerId
    slots_number: Count = Field(alias="slotsNumber")
    free_slots: Count = Field(alias="freeSlots")
    # Despite its name, when the resource manager last heard the TaskManager's heartbeat (epoch ms).
    last_heartbeat_ms: Millis | None = Field(None, alias="timeSinceLastHeartbeat")


class TaskManagers(_Reply):
    taskmanagers: tuple[TaskManager, ...]


class JobSummary(_Reply):
    jid: JobId
    name: str
    state: str = Field(max_length=32)
    start_time: Millis = Field(alias="start-time")
    end_time: Millis = Field(alias="end-time")
    duration: Millis


class JobsOverview(_Reply):
    jobs: tuple[JobSummary, ...]


class Vertex(_Reply):
    id: VertexId
    name: str
    parallelism: int = Field(ge=1, le=32768)  # Flink's maximum parallelism
    status: str = Field(max_length=32)

    @property
    def is_source(self) -> bool:
        return self.name.startswith("Source:")


class JobDetail(_Reply):
    jid: JobId
    name: str
    state: str = Field(max_length=32)
    start_time: Millis = Field(alias="start-time")
    now: Millis
    timestamps: dict[str, Millis] = Field(default_factory=dict)
    vertices: tuple[Vertex, ...]

    @property
    def all_running(self) -> bool:
        return self.state == "RUNNING" and all(v.status == "RUNNING" for v in self.vertices)


class CheckpointCounts(_Reply):
    restored: Count
    total: Count
    in_progress: Count
    completed: Count
    failed: Count


class CheckpointHistoryEntry(_Reply):
    id: Count
    status: str = Field(max_length=32)
    is_savepoint: bool
    trigger_timestamp: Millis
    latest_ack_timestamp: Millis
    state_size: Bytes
    end_to_end_duration: Millis
    checkpointed_size: Bytes = 0  # of an incremental checkpoint, what it wrote; else the state size
    alignment_buffered: Bytes = 0
    processed_data: Bytes = 0


class CompletedCheckpoint(CheckpointHistoryEntry):
    checkpointed_size: Bytes
    external_path: str | None = None


class RestoredCheckpoint(_Reply):
    id: Count
    restore_timestamp: Millis
    is_savepoint: bool
    external_path: str | None = None


class FailedCheckpoint(_Reply):
    id: Count
    failure_timestamp: Millis | None = None
    failure_message: str | None = None


class LatestCheckpoints(_Reply):
    completed: CompletedCheckpoint | None = None
    savepoint: CompletedCheckpoint | None = None
    failed: FailedCheckpoint | None = None
    restored: RestoredCheckpoint | None = None


class CheckpointStats(_Reply):
    counts: CheckpointCounts
    latest: LatestCheckpoints
    history: tuple[CheckpointHistoryEntry, ...] = ()


class CheckpointConfigReply(_Reply):
    mode: str
    interval: Annotated[int, Field(ge=0, le=2**63 - 1)]  # no periodic checkpoints: Long.MAX_VALUE
    timeout: Millis
    min_pause: Millis
    max_concurrent: Count
    state_backend: str | None = None
    checkpoint_storage: str | None = None


class ExceptionEntry(_Reply):
    exception_name: str = Field(alias="exceptionName")
    timestamp: Millis
    task_name: str | None = Field(default=None, alias="taskName")


class ExceptionHistory(_Reply):
    entries: tuple[ExceptionEntry, ...]
    truncated: bool


class ExceptionsReply(_Reply):
    exception_history: ExceptionHistory = Field(alias="exceptionHistory")


class SubtaskTimes(_Reply):
    """When the subtask's current attempt entered each state (epoch ms, Flink's clock): CREATED, SCHEDULED,
    DEPLOYING, INITIALIZING, RUNNING, ..."""

    subtask: Count
    timestamps: dict[str, Millis] = Field(default_factory=dict)


class SubtasksTimesReply(_Reply):
    subtasks: tuple[SubtaskTimes, ...]


class ConfigEntry(_Reply):
    key: str
    value: str


class Metric(_Reply):
    id: str
    value: str | None = None

    @property
    def number(self) -> float | None:
        """The value as a finite number; None for none, NaN (Flink's word for "no measurement yet", as a source's
        busy time) or an infinity: no reading carries one past this edge."""
        try:
            value = float(self.value) if self.value is not None else None
        except ValueError:
            return None
        return value if value is not None and math.isfinite(value) else None


class SavepointStatus(_Reply):
    id: str  # IN_PROGRESS | COMPLETED


class SavepointOperation(_Reply):
    location: str | None = None
    failure_cause: dict[str, object] | None = Field(default=None, alias="failure-cause")


class SavepointTrigger(_Reply):
    status: SavepointStatus
    operation: SavepointOperation | None = None


class CheckpointOperation(_Reply):
    checkpoint_id: Count | None = Field(default=None, alias="checkpointId")
    failure_cause: dict[str, object] | None = Field(default=None, alias="failureCause")  # so spelled, unlike savepoints


class CheckpointTrigger(_Reply):
    """GET /jobs/:jobid/checkpoints/:triggerid (FLINK-27101, Flink 1.17+)."""

    status: SavepointStatus
    operation: CheckpointOperation | None = None


class VertexLoad(_Reply):
    """How hard a vertex works: the busiest subtask's busy and back-pressured ms per second.

    busyTimeMsPerSecond is NaN on sources in Flink 2.3, so either figure can be None.
    """

    vertex_id: str
    name: str
    max_busy_ms_per_s: float | None
    max_backpressured_ms_per_s: float | None
