"""The jobs one controller tunes (the jobs file of a many-job `chronos tune`): each job named once, with its
own targets and policy over shared defaults, checked whole before anything is touched.

    defaults:                     # TunePolicy fields every job shares (snake or kebab case)
      recovery_s: 60
      interval_max_s: 120
    jobs:
      - name: orders              # the job's label in messages and JSON lines: unique
        job: 6b3c...              # a running job's Flink id (the local stack, or the controller's --rest-url) ...
        policy: {latency_p99_ms: 5000}
      - name: fleet
        flink_deployment: fleet   # ... or a FlinkDeployment (its namespace; a job file optional, as for one job)
        namespace: streaming
        job_file: jobs/fleet.yaml
        rest_url: http://fleet-rest.streaming:8081   # its own cluster's REST API (default: the controller's)

A job's policy is the defaults with its own fields over them, validated as one TunePolicy: a job whose merged policy
is invalid (no recovery target, a minimum above the maximum) refuses the whole file in one line naming the job, so a
controller never starts with some of its jobs silently left out. The metrics label a job by its name in Flink
(`job_name`, as Flink's own reporter does), so a dashboard joins chronos's series with Flink's.

The file can change under a running controller (`changes`): a job it lost is let go, one whose entry changed is
let go and taken up again as the entry now says, a new one is taken up; the others are not touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chronos.errors import InvalidInput, field_error, is_job_id
from chronos.model import check_kube_name, check_kube_namespace, check_url
from chronos.optimizer.policy import TunePolicy, policy_fields

MAX_JOBS = 1000  # a file of more is a mistake, not a fleet: refused before anything is built


@dataclass(frozen=True)
class JobTarget:
    """One job of the controller: how to find it and the policy it is tuned by."""

    name: str
    policy: TunePolicy
    job_id: str | None = None
    flink_deployment: str | None = None
    namespace: str = "default"
    job_file: Path | None = None
    rest_url: str | None = None  # its Flink cluster's REST API, if not the controller's (a FlinkDeployment's own)


def _snake(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    try:
        return policy_fields(data, "a job's entry")
    except InvalidInput as exc:
        raise ValueError(str(exc).removeprefix("a job's entry: ")) from None


class _Job(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=320, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # <namespace>.<name> fits
    job: str | None = None
    flink_deployment: str | None = Field(None, min_length=1, max_length=253)
    namespace: str = Field("default", min_length=1, max_length=63)
    job_file: Path | None = None
    rest_url: str | None = Field(None, max_length=2048)
    policy: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _kebab(cls, data: Any) -> Any:
        return _snake(data)

    @model_validator(mode="after")
    def _one_way_to_find_it(self) -> _Job:
        if (self.job is None) == (self.flink_deployment is None):
            raise ValueError("give exactly one of job (a Flink job id) and flink_deployment")
        if self.job is not None and not is_job_id(self.job):
            raise ValueError(f"job {self.job[:40]!r} is not a Flink job id (32 hex digits)")
        try:  # they become the API server's URL paths: `..`, `a/b` or `../../api` would address something else
            check_kube_namespace(self.namespace)
            if self.flink_deployment is not None:
                check_kube_name(self.flink_deployment, "flink_deployment")
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
        if self.rest_url is not None:
            try:
                check_url(self.rest_url, "rest_url")
            except InvalidInput as exc:
                raise ValueError(str(exc)) from None
        return self


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: dict[str, Any] = Field(default_factory=dict)
    jobs: list[_Job] = Field(min_length=1, max_length=MAX_JOBS)


def job_targets(data: Any, where: str, base_dir: Path) -> tuple[JobTarget, ...]:
    """The file's jobs, each with its merged policy; `where` names the file in an error, `base_dir` is what a
    relative job_file is read against (the file's own directory)."""
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{where}: {field_error(exc.errors())}") from None
    seen: set[str] = set()
    targets = []
    for job in parsed.jobs:
        if job.name in seen:
            raise InvalidInput(f"{where}: job name {job.name!r} is given twice; each job needs a name of its own")
        seen.add(job.name)
        try:
            policy = TunePolicy(**{**policy_fields(parsed.defaults, f"{where}: defaults"),
                                   **policy_fields(job.policy, f"{where}: job {job.name}")})
        except ValidationError as exc:
            raise InvalidInput(f"{where}: job {job.name}: invalid policy: {field_error(exc.errors())}") from None
        job_file = None if job.job_file is None else (base_dir / job.job_file if not job.job_file.is_absolute()
                                                      else job.job_file)
        if job_file is not None and not job_file.is_file():
            raise InvalidInput(f"{where}: job {job.name}: job file {job_file} is not a file")
        targets.append(JobTarget(job.name, policy, job.job, job.flink_deployment, job.namespace, job_file,
                                 job.rest_url))
    return tuple(targets)


def read_job_targets(path: Path) -> tuple[JobTarget, ...]:
    """The jobs file at `path` (YAML or JSON), each job's relative job_file read against its directory."""
    from chronos.input_files import read_mapping

    return job_targets(read_mapping(path, "jobs file", "defaults: and jobs:"), f"jobs file {path}", path.parent)


@dataclass(frozen=True)
class TargetChanges:
    add: tuple[JobTarget, ...]
    remove: tuple[tuple[str, str], ...]  # (name, why)


def changes(wanted: tuple[JobTarget, ...], tuned: Mapping[str, JobTarget], let_go: Mapping[str, JobTarget],
            lost: str = "no longer in the jobs file", changed: str = "its entry in the jobs file changed") -> TargetChanges:
    """What brings the jobs `tuned` now to the file's `wanted`: a job the file lost is removed; one whose entry
    changed is removed, and added again (as it now reads) by the next call, once it is gone; a new one is added.
    `let_go`: jobs that left on their own (ended from outside, could not start) as their entry read then; one is
    taken up again only once its entry changes (or the caller forgets it: a SIGHUP), not every time the file is
    read. `lost`, `changed`: why a job is let go, in the words of where the jobs come from."""
    by_name = {target.name: target for target in wanted}
    remove = [(name, lost) for name in tuned if name not in by_name]
    remove += [(name, changed) for name, target in tuned.items()
               if name in by_name and by_name[name] != target]
    add = [target for target in wanted if target.name not in tuned and let_go.get(target.name) != target]
    return TargetChanges(tuple(add), tuple(remove))
