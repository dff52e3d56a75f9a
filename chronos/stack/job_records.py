"""What chronos submitted: the spec and settings of each job id, kept in the stack directory.

A running Flink job cannot say how to start it again; this record can. The last savepoint taken
from a job is written here before its replacement is submitted, so an interrupted restart can always
be redone from a savepoint on record.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from chronos.errors import InvalidInput, is_job_id
from chronos.model import CheckpointSettings, JobIO, JobSpec


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    spec: JobSpec
    settings: CheckpointSettings
    restored_from: str | None = None
    stopped_with_savepoint: str | None = None
    replaced_by: str | None = None
    io: JobIO | None = None  # None: a demo job written before records carried it (its args say)


class JobRecordStore:
    def __init__(self, directory: Path) -> None:
        self._dir = directory

    def _path(self, job_id: str) -> Path:
        """Only a Flink job id names a record file: anything else could name a path outside the store."""
        if not is_job_id(job_id):
            raise InvalidInput(f"{job_id[:80]!r} is not a Flink job id (32 hex digits)")
        return self._dir / f"{job_id}.json"

    def save(self, record: JobRecord) -> None:
        path = self._path(record.job_id)
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # records hold SQL vars and paths
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(asdict(record), indent=2))
        os.replace(tmp, path)

    def get(self, job_id: str) -> JobRecord | None:
        if not is_job_id(job_id):
            return None
        path = self._path(job_id)
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        spec = data["spec"]
        return JobRecord(
            job_id=data["job_id"],
            spec=JobSpec.from_json(spec),
            io=JobIO(**{**data["io"], "more_input_topics": tuple(data["io"].get("more_input_topics", ()))})
            if data.get("io") else None,
            settings=CheckpointSettings(**data["settings"]),
            restored_from=data.get("restored_from"),
            stopped_with_savepoint=data.get("stopped_with_savepoint"),
            replaced_by=data.get("replaced_by"),
        )

    def all(self) -> list[JobRecord]:
        records = (self.get(p.stem) for p in sorted(self._dir.glob("*.json")) if is_job_id(p.stem))
        return [r for r in records if r is not None]
