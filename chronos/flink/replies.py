"""Typed views of the Flink REST replies chronos reads (Flink 2.3), parsed at the boundary.

Only the fields chronos uses are declared; unknown fields are ignored so newer Flink versions still
parse. Field names follow Flink's JSON through aliases.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Reply(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")


class ClusterOverview(_Reply):
    flink_version: str = Field(alias="flink-version")
    taskmanagers: int
    slots_total: int = Field(alias="slots-total")
    slots_available: int = Field(alias="slots-available")
    jobs_running: int = Field(alias="jobs-running")


class TaskManager(_Reply):
    id: str
    slots_number: int = Field(alias="slotsNumber")
    free_slots: int = Field(alias="freeSlots")
    # Despite its name, when the resource manager last heard the TaskManager's heartbeat (epoch ms).
    last_heartbeat_ms: int | None = Field(None, alias="timeSinceLastHeartbeat")


class TaskManagers(_Reply):
    taskmanagers: tuple[TaskManager, ...]


JOB_ID_PATTERN = r"^[0-9a-f]{32}$"  # a job id becomes a URL path and a file name: nothing else passes


class JobSummary(_Reply):
    jid: str = Field(pattern=JOB_ID_PATTERN)
    name: str
    state: str
    start_time: int = Field(alias="start-time")
    end_time: int = Field(alias="end-time")
    duration: int


class JobsOverview(_Reply):
    jobs: tuple[JobSummary, ...]


class Vertex(_Reply):
    id: str
    name: str
    parallelism: int
    status: str

    @property
    def is_source(self) -> bool:
        return self.name.startswith("Source:")


class JobDetail(_Reply):
    jid: str = Field(pattern=JOB_ID_PATTERN)
    name: str
    state: str
    start_time: int = Field(alias="start-time")
    now: int
    timestamps: dict[str, int] = Field(default_factory=dict)
    vertices: tuple[Vertex, ...]

    @property
    def all_running(self) -> bool:
        return self.state == "RUNNING" and all(v.status == "RUNNING" for v in self.vertices)


class CheckpointCounts(_Reply):
    restored: int
    total: int
    in_progress: int
    completed: int
    failed: int


class CheckpointHistoryEntry(_Reply):
    id: int
    status: str
    is_savepoint: bool
    trigger_timestamp: int
    latest_ack_timestamp: int
    state_size: int
    end_to_end_duration: int
    checkpointed_size: int = 0  # of an incremental checkpoint, what it wrote; else the state size
    alignment_buffered: int = 0
    processed_data: int = 0


class CompletedCheckpoint(CheckpointHistoryEntry):
    checkpointed_size: int
    external_path: str | None = None


class RestoredCheckpoint(_Reply):
    id: int
    restore_timestamp: int
    is_savepoint: bool
    external_path: str | None = None


class FailedCheckpoint(_Reply):
    id: int
    failure_timestamp: int | None = None
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
    interval: int
    timeout: int
    min_pause: int
    max_concurrent: int
    state_backend: str | None = None
    checkpoint_storage: str | None = None


class ExceptionEntry(_Reply):
    exception_name: str = Field(alias="exceptionName")
    timestamp: int
    task_name: str | None = Field(default=None, alias="taskName")


class ExceptionHistory(_Reply):
    entries: tuple[ExceptionEntry, ...]
    truncated: bool


class ExceptionsReply(_Reply):
    exception_history: ExceptionHistory = Field(alias="exceptionHistory")


class SubtaskTimes(_Reply):
    """When the subtask's current attempt entered each state (epoch ms, Flink's clock): CREATED, SCHEDULED,
    DEPLOYING, INITIALIZING, RUNNING, ..."""

    subtask: int
    timestamps: dict[str, int] = Field(default_factory=dict)


class SubtasksTimesReply(_Reply):
    subtasks: tuple[SubtaskTimes, ...]


class Metric(_Reply):
    id: str
    value: str | None = None

    @property
    def number(self) -> float | None:
        try:
            return float(self.value) if self.value is not None else None
        except ValueError:
            return None


class SavepointStatus(_Reply):
    id: str  # IN_PROGRESS | COMPLETED


class SavepointOperation(_Reply):
    location: str | None = None
    failure_cause: dict[str, object] | None = Field(default=None, alias="failure-cause")


class SavepointTrigger(_Reply):
    status: SavepointStatus
    operation: SavepointOperation | None = None


class CheckpointOperation(_Reply):
    checkpoint_id: int | None = Field(default=None, alias="checkpointId")
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
