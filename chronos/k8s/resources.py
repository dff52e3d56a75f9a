"""What chronos reads of the Kubernetes objects it is given (FlinkDeployments, pods), as schemas: an API server's reply
is checked before anything is read off it, so a field of the wrong type, a name that is not a Kubernetes name, a job
id that is not one or a `lastReconciledSpec` that is not JSON is one line naming the field, never an AttributeError
deep in a loop. Fields chronos does not read are let through untouched (a merge patch sends back only what it names).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from chronos.errors import InvalidInput, field_error, is_job_id
from chronos.input_files import load_json
from chronos.model import check_kube_name, check_kube_namespace


def _checked(check: Any) -> Any:
    def validate(value: str) -> str:
        try:
            return str(check(value))
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
    return AfterValidator(validate)


KubeName = Annotated[str, _checked(check_kube_name)]
KubeNamespace = Annotated[str, _checked(check_kube_namespace)]
Text = Annotated[str, Field(max_length=64 << 10)]
MAX_ITEMS = 10_000  # a namespace's list: more is not a namespace chronos tunes


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class Metadata(_Lenient):
    name: KubeName
    namespace: KubeNamespace | None = None
    annotations: dict[Annotated[str, Field(max_length=317)], Text] = Field(default_factory=dict, max_length=1000)
    creation_timestamp: str | None = Field(None, alias="creationTimestamp", max_length=64)


class _Job(_Lenient):
    upgrade_mode: str | None = Field(None, alias="upgradeMode", max_length=32)


FlinkValue = Annotated[str, Field(max_length=64 << 10)] | int | float | bool | None


class _Spec(_Lenient):
    job: _Job | None = None
    flink_configuration: dict[Annotated[str, Field(max_length=1024)], FlinkValue] | None = Field(
        None, alias="flinkConfiguration", max_length=10_000)


class _JobStatus(_Lenient):
    state: str | None = Field(None, max_length=64)
    job_id: str | None = Field(None, alias="jobId")

    @field_validator("job_id")
    @classmethod
    def _a_job_id(cls, value: str | None) -> str | None:
        if value is not None and not is_job_id(value):
            raise ValueError(f"{value[:40]!r} is not a Flink job id (32 hex digits)")
        return value


class _Reconciliation(_Lenient):
    last_reconciled_spec: str | None = Field(None, alias="lastReconciledSpec", max_length=4 << 20)


class _Status(_Lenient):
    lifecycle_state: str | None = Field(None, alias="lifecycleState", max_length=64)
    job_status: _JobStatus | None = Field(None, alias="jobStatus")
    reconciliation_status: _Reconciliation | None = Field(None, alias="reconciliationStatus")
    error: Text | None = None


class FlinkDeployment(_Lenient):
    metadata: Metadata
    spec: _Spec = Field(default_factory=_Spec)
    status: _Status = Field(default_factory=_Status)

    @property
    def configuration(self) -> dict[str, FlinkValue]:
        return dict(self.spec.flink_configuration or {})

    def reconciled_configuration(self) -> dict[str, Any]:
        """The flinkConfiguration of the spec the operator last reconciled (a JSON text in its status)."""
        text = (self.status.reconciliation_status or _Reconciliation()).last_reconciled_spec
        if not text:
            return {}
        spec = load_json(text, f"FlinkDeployment {self.metadata.name}'s status.reconciliationStatus.lastReconciledSpec")
        configuration = spec.get("flinkConfiguration") if isinstance(spec, dict) else None
        if configuration is not None and not isinstance(configuration, dict):
            raise InvalidInput(f"FlinkDeployment {self.metadata.name}'s lastReconciledSpec has a flinkConfiguration "
                               "that is not a mapping")
        return configuration or {}


class _List(BaseModel):
    model_config = ConfigDict(extra="allow")
    items: list[Any] | None = Field(default_factory=list, max_length=MAX_ITEMS)


class _PodStatus(_Lenient):
    phase: str | None = Field(None, max_length=64)


class Pod(_Lenient):
    metadata: Metadata
    status: _PodStatus = Field(default_factory=_PodStatus)


def deployment(data: Any, where: str) -> FlinkDeployment:
    """A FlinkDeployment from a reply, or one line naming `where` and the field."""
    try:
        return FlinkDeployment.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{where} is not a FlinkDeployment as chronos reads one: {field_error(exc.errors())}") from None


def listed_items(data: Any, where: str) -> list[Any]:
    """A list reply's items, each still to be read on its own (one bad item does not hide the others)."""
    try:
        return list(_List.model_validate(data).items or [])
    except ValidationError as exc:
        raise InvalidInput(f"{where} is not a list chronos reads: {field_error(exc.errors())}") from None


def pod(data: Any, where: str) -> Pod:
    try:
        return Pod.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{where} is not a pod chronos reads: {field_error(exc.errors())}") from None
