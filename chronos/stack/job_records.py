"""What chronos submitted: the spec and settings of each job id, kept in the stack directory.

A running Flink job cannot say how to start it again; this record can. The last savepoint taken
from a job is written here before its replacement is submitted, so an interrupted restart can always
be redone from a savepoint on record.

A record names a program chronos runs again and a savepoint it restores: it is read back only while it is
chronos's own (chronos.input_files.require_private), through a schema, and a record that is not one (cut
short, a field of the wrong kind, another job's) is one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from chronos.errors import InvalidInput, field_error, is_job_id
from chronos.input_files import read_own_json, write_private
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


_RECORD = TypeAdapter(JobRecord)  # fields added since take their defaults, so older records still read


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
        # 0600: records hold SQL vars and paths. Secrets only as references (chronos.secret_refs): dumped as such.
        write_private(path, _RECORD.dump_json(record, indent=2).decode())

    def get(self, job_id: str) -> JobRecord | None:
        if not is_job_id(job_id):
            return None
        path = self._path(job_id)
        if not path.exists():
            return None
        try:
            record = _RECORD.validate_python(read_own_json(path, "job record"))
        except ValidationError as exc:
            raise InvalidInput(f"job record {path} is not one chronos wrote: {field_error(exc.errors())}") from None
        if record.job_id != job_id or (record.replaced_by is not None and not is_job_id(record.replaced_by)):
            raise InvalidInput(f"job record {path} is not one chronos wrote: it names job {record.job_id[:40]!r}")
        if record.settings.interval_ms <= 0:
            raise InvalidInput(f"job record {path} is not one chronos wrote: settings.interval_ms is not positive")
        return record

    def all(self) -> list[JobRecord]:
        records = (self.get(p.stem) for p in sorted(self._dir.glob("*.json")) if is_job_id(p.stem))
        return [r for r in records if r is not None]

    def current(self, job_id: str) -> JobRecord | None:
        """The record of the job running in `job_id`'s place now: followed along its replacements (each retune
        records what replaced it), so `--job OLD` finds the job a retune started since; a loop of records stops."""
        record, seen = self.get(job_id), set()
        while record is not None and record.replaced_by and record.job_id not in seen:
            seen.add(record.job_id)
            record = self.get(record.replaced_by)
        return record
