"""A fake Flink cluster for the tuner's unit tests: it keeps the facts the retune guarantees are about
(which jobs live, from which savepoint each was restored, what each runs with) and can fail on cue."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.errors import FlinkRequestFailed
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobSpec


class Crash(BaseException):
    """The tuner process dying at this point (nothing after it runs, nothing is cleaned up)."""


@dataclass
class FakeJob:
    name: str
    state: str
    interval_ms: int
    started_ms: int
    restored_from: str | None = None
    savepoints: list[str] = field(default_factory=list)


class FakeCluster:
    def __init__(self) -> None:
        self.jobs: dict[str, FakeJob] = {}
        self.now_ms = 1_000_000
        self.failing_submissions = 0
        self.crash_after: str | None = None
        self.fail_on_restore: set[int] = set()  # intervals whose jobs die while restoring
        self.submissions = 0

    def tick(self) -> int:
        self.now_ms += 1000
        return self.now_ms

    def start(self, name: str, interval_ms: int, savepoint: str | None = None) -> str:
        job_id = f"job{len(self.jobs)}"
        self.jobs[job_id] = FakeJob(name, "RUNNING", interval_ms, self.tick(), savepoint)
        return job_id

    def live(self) -> list[str]:
        return [jid for jid, j in self.jobs.items() if j.state not in TERMINAL_STATES]

    # -- JobControl --
    def state(self, job_id: str) -> str:
        return self.jobs[job_id].state if job_id in self.jobs else "UNKNOWN"

    def stop_with_savepoint(self, job_id: str) -> str:
        job = self.jobs[job_id]
        path = f"/savepoints/{job_id}-{self.tick()}"
        job.savepoints.append(path)
        job.state = "FINISHED"
        if self.crash_after == "stop":
            raise Crash
        return path

    def savepoint_of(self, job_id: str) -> str | None:
        return self.jobs[job_id].savepoints[-1] if self.jobs[job_id].savepoints else None

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str) -> str:
        self.submissions += 1
        if self.failing_submissions:
            self.failing_submissions -= 1
            raise FlinkRequestFailed("run failed: connection reset")
        job_id = self.start(spec.name, settings.interval_ms, savepoint)
        if settings.interval_ms in self.fail_on_restore:
            self.jobs[job_id].state = "FAILED"
        if self.crash_after == "submit":
            raise Crash
        return job_id

    def wait_until_running(self, job_id: str, timeout_s: float) -> None:
        if self.state(job_id) != "RUNNING":
            raise FlinkRequestFailed(f"job {job_id} is {self.jobs[job_id].state}")

    def interval_ms(self, job_id: str) -> int:
        return self.jobs[job_id].interval_ms

    def live_jobs(self, name: str) -> list[tuple[str, int]]:
        return [(jid, self.jobs[jid].started_ms) for jid in self.live() if self.jobs[jid].name == name]
