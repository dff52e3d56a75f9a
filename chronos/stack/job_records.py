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
        return self._dir / f"{job_id}.json"

    def save(self, record: JobRecord) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        path = self._path(record.job_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(record), indent=2))
        os.replace(tmp, path)

    def get(self, job_id: str) -> JobRecord | None:
        path = self._path(job_id)
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        spec = data["spec"]
        return JobRecord(
            job_id=data["job_id"],
            spec=JobSpec(
                name=spec["name"], python_file=spec["python_file"], args=tuple(spec["args"]),
                parallelism=spec["parallelism"],
                extra_config=tuple((str(k), str(v)) for k, v in spec["extra_config"]),
                jar=spec.get("jar", ""), entry_class=spec.get("entry_class", ""),
            ),
            io=JobIO(**data["io"]) if data.get("io") else None,
            settings=CheckpointSettings(**data["settings"]),
            restored_from=data.get("restored_from"),
            stopped_with_savepoint=data.get("stopped_with_savepoint"),
            replaced_by=data.get("replaced_by"),
        )

    def all(self) -> list[JobRecord]:
        records = (self.get(p.stem) for p in sorted(self._dir.glob("*.json")))
        return [r for r in records if r is not None]
