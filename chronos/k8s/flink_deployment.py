"""Retuning a job the Flink Kubernetes Operator manages: patch the FlinkDeployment's
`flinkConfiguration` and let the operator do what it does for any spec change (suspend with a
savepoint, redeploy from it), then verify the new interval is in force.

chronos never stops such a job itself: the operator owns it, and a second actor stopping it would
fight the operator's reconciliation. The savepoint is therefore the operator's, and chronos refuses
a deployment whose `upgradeMode` is `stateless` (an upgrade would drop the state: data lost).

The Kubernetes API is reached through `DeploymentApi`, a small wrapper of ours held by one contract suite on a fake
and on `KubeDeploymentApi`, the real one over the API server's REST endpoints (chronos.k8s.kube_api: every exchange
bounded, every reply read through a schema).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from chronos.clock import wall_ms
from chronos.errors import ChronosError, InvalidInput
from chronos.k8s.kube_api import KubeApi, kube_call, namespaced
from chronos.k8s.resources import deployment, listed_items
from chronos.model import MAX_DURATION_MS, format_interval, parse_interval_ms
from chronos.tune.discovery import Listed
from chronos.tune.journal import Journal, Retune
from chronos.tune.retune import RetuneOutcome, TunedJob

INTERVAL_KEY = "execution.checkpointing.interval"
GROUP, VERSION, PLURAL = "flink.apache.org", "v1beta1", "flinkdeployments"
GROUP_PATH = f"/apis/{GROUP}/{VERSION}"
SAFE_UPGRADE_MODES = frozenset({"savepoint", "last-state"})
SETTLED = frozenset({"DEPLOYED", "STABLE"})
FAILED = frozenset({"FAILED", "ROLLED_BACK", "ROLLING_BACK"})


class DeploymentFailed(ChronosError):
    pass


@dataclass(frozen=True)
class DeploymentStatus:
    """What chronos reads off a FlinkDeployment (spec and operator status)."""

    name: str
    upgrade_mode: str
    interval_ms: int | None  # in the spec
    reconciled_interval_ms: int | None  # in the spec the operator last reconciled
    lifecycle_state: str
    job_state: str
    job_id: str | None
    error: str | None

    @staticmethod
    def from_resource(resource: Mapping[str, Any]) -> DeploymentStatus:
        """Read through the schema (chronos.k8s.resources): one line naming the field that is not as it should be."""
        metadata = resource.get("metadata") if isinstance(resource, Mapping) else None
        named = metadata.get("name") if isinstance(metadata, Mapping) else None
        found = deployment(resource, f"FlinkDeployment {named[:80]!r}" if isinstance(named, str) else "a FlinkDeployment")
        where = f"FlinkDeployment {found.metadata.name}"
        job_status = found.status.job_status
        return DeploymentStatus(
            name=found.metadata.name,
            upgrade_mode=(found.spec.job.upgrade_mode if found.spec.job else None) or "stateless",
            interval_ms=_interval(found.configuration.get(INTERVAL_KEY), where),
            reconciled_interval_ms=_interval(found.reconciled_configuration().get(INTERVAL_KEY), f"{where}'s "
                                             "last reconciled spec"),
            lifecycle_state=found.status.lifecycle_state or "",
            job_state=(job_status.state if job_status else None) or "",
            job_id=job_status.job_id if job_status else None,
            error=found.status.error,
        )


def _interval(value: object, where: str) -> int | None:
    """A Flink duration as the operator keeps it ("30s", "2 min", a bare number of milliseconds), bounded as the
    CLI bounds an interval (chronos.model.parse_interval_ms)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput(f"{where}: {INTERVAL_KEY} is not a duration chronos reads")
    text = str(value).strip()
    try:
        if text.isdigit():
            if len(text) > 12 or int(text) > MAX_DURATION_MS or int(text) <= 0:
                raise InvalidInput("out of range")
            return int(text)
        return parse_interval_ms(text.replace(" ", ""))
    except InvalidInput:
        raise InvalidInput(f"{where}: {INTERVAL_KEY} {text[:40]!r} is not a duration chronos takes (1 ms to 400 "
                           "days)") from None


class DeploymentApi(Protocol):
    def get(self, namespace: str, name: str) -> Mapping[str, Any]: ...
    def patch_configuration(self, namespace: str, name: str, configuration: Mapping[str, str]) -> None:
        """Merge these keys into spec.flinkConfiguration."""
        ...


class KubeDeploymentApi:
    """DeploymentApi (and the discovery's lister) over the API server's custom-objects endpoints, every reply read
    through the FlinkDeployment schema."""

    def __init__(self, api: KubeApi) -> None:
        self._api = api

    @classmethod
    def from_kubeconfig(cls) -> KubeDeploymentApi:
        return cls(KubeApi.from_environment())

    def get(self, namespace: str, name: str) -> Mapping[str, Any]:
        path = namespaced(GROUP_PATH, namespace, PLURAL, name)
        what = f"get FlinkDeployment {namespace}/{name}"
        reply = kube_call(what, lambda: self._api.request("GET", path, what))
        return deployment(reply, f"FlinkDeployment {namespace}/{name}").model_dump(by_alias=True, exclude_none=True)

    def list(self, namespace: str) -> Listed:
        """Every FlinkDeployment of the namespace (`chronos tune --discover` picks the annotated ones); an item that
        is not one chronos reads is one line of `unreadable`, and the others are listed."""
        path = namespaced(GROUP_PATH, namespace, PLURAL)
        what = f"list FlinkDeployments in {namespace}"
        reply = kube_call(what, lambda: self._api.request("GET", path, what))
        items: list[Mapping[str, Any]] = []
        unreadable: list[str] = []
        for index, item in enumerate(listed_items(reply, f"the list of FlinkDeployments in {namespace}")):
            try:
                items.append(deployment(item, f"item {index} of the FlinkDeployments in {namespace}")
                             .model_dump(by_alias=True, exclude_none=True))
            except InvalidInput as exc:
                unreadable.append(str(exc))
        return Listed(tuple(items), tuple(unreadable))

    def patch_configuration(self, namespace: str, name: str, configuration: Mapping[str, str]) -> None:
        path = namespaced(GROUP_PATH, namespace, PLURAL, name)
        what = f"patch FlinkDeployment {namespace}/{name}"
        body = {"spec": {"flinkConfiguration": dict(configuration)}}
        kube_call(what, lambda: self._api.request("PATCH", path, what, body=body,
                                                  content_type="application/merge-patch+json"))


def apply_configuration(api: DeploymentApi, namespace: str, name: str, lines: Mapping[str, str]) -> dict[str, str]:
    """Cluster-level settings (heartbeats, `slotmanager.redundant-taskmanager-num`) patched into the
    FlinkDeployment's flinkConfiguration; the operator then restarts the cluster the way its upgradeMode says
    (savepoint or last-state: the job resumes from its state). Only keys whose value changes are patched; returns
    them (nothing: no patch, no restart)."""
    current = deployment(api.get(namespace, name), f"FlinkDeployment {namespace}/{name}").configuration
    changed = {key: value for key, value in lines.items() if str(current.get(key)) != value}
    if changed:
        api.patch_configuration(namespace, name, changed)
    return changed


class DeploymentRealizer:
    """The tuner's realizer for operator-managed jobs: retune = patch, wait for the operator, verify.

    Journaled like the local path: decided -> resubmitted (the patch is applied; the operator
    upgrades) -> verified | rolled-back | abandoned. A tuner that dies after the patch finds the step
    `resubmitted` and only waits and verifies; one that dies before it finds the spec unchanged and
    abandons the retune (the job was never touched).
    """

    def __init__(
        self,
        api: DeploymentApi,
        namespace: str,
        deployment: str,
        journal: Journal,
        *,
        interval_in_force: Callable[[str], int] | None = None,
        wall_ms: Callable[[], int] = wall_ms,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        upgrade_timeout_s: float = 600.0,
        poll_s: float = 2.0,
    ) -> None:
        self._api = api
        self._namespace = namespace
        self._name = deployment
        self._journal = journal
        self._interval_in_force = interval_in_force  # Flink REST /checkpoints/config, when reachable
        self._wall_ms = wall_ms
        self._clock = clock
        self._sleep = sleep
        self._timeout_s = upgrade_timeout_s
        self._poll_s = poll_s

    def status(self) -> DeploymentStatus:
        return DeploymentStatus.from_resource(self._api.get(self._namespace, self._name))

    def check(self) -> DeploymentStatus:
        """Refuse, in one line, a deployment chronos must not upgrade."""
        status = self.status()
        if status.upgrade_mode not in SAFE_UPGRADE_MODES:
            raise InvalidInput(f"FlinkDeployment {self._namespace}/{self._name} has upgradeMode "
                               f"{status.upgrade_mode!r}: an interval change would restart it without its state; "
                               "set spec.job.upgradeMode to savepoint or last-state")
        return status

    def retune(self, job: TunedJob, to_ms: int, explanation: str) -> RetuneOutcome:
        before = self.check()
        entry = self._journal.open_retune(job.spec.name, job.job_id, job.settings.interval_ms, to_ms,
                                          self._wall_ms(), explanation)
        start = self._clock()
        self._api.patch_configuration(self._namespace, self._name, {INTERVAL_KEY: format_interval(to_ms)})
        entry = self._journal.advance(entry.retune_id, "resubmitted", self._wall_ms(),
                                      note=f"patched {self._namespace}/{self._name} {INTERVAL_KEY}="
                                           f"{format_interval(to_ms)}; the operator upgrades it "
                                           f"(upgradeMode {before.upgrade_mode})")
        return self._await(entry, job, start)

    def resume(self, entry: Retune, job: TunedJob) -> RetuneOutcome:
        start = self._clock()
        if entry.step == "decided":
            if self.status().interval_ms != entry.to_interval_ms:
                entry = self._journal.advance(entry.retune_id, "abandoned", self._wall_ms(),
                                              note="the patch never happened; the deployment is untouched")
                return RetuneOutcome(entry, job, "abandoned", None)
            entry = self._journal.advance(entry.retune_id, "resubmitted", self._wall_ms(),
                                          note="found the patch applied")
        return self._await(entry, job, start)

    def _await(self, entry: Retune, job: TunedJob, start: float) -> RetuneOutcome:
        target = entry.to_interval_ms
        deadline = self._clock() + self._timeout_s
        status = self.status()
        while not self._upgraded(status, target):
            if status.lifecycle_state in FAILED:
                return self._roll_back(entry, job, status)
            if self._clock() >= deadline:
                raise DeploymentFailed(
                    f"FlinkDeployment {self._namespace}/{self._name} not upgraded to {format_interval(target)} after "
                    f"{self._timeout_s:.0f} s (lifecycle {status.lifecycle_state or '?'}, job {status.job_state or '?'}"
                    f"{', error: ' + status.error[:200] if status.error else ''}); run `chronos tune` again to keep waiting")
            self._sleep(self._poll_s)
            status = self.status()
        downtime = self._clock() - start
        job_id = status.job_id or job.job_id
        if self._interval_in_force is not None:
            in_force = self._interval_in_force(job_id)
            if in_force != target:
                raise DeploymentFailed(f"job {job_id} runs with interval {format_interval(in_force)}, not the "
                                       f"{format_interval(target)} patched into {self._name}")
        entry = self._journal.advance(entry.retune_id, "verified", self._wall_ms(), new_job_id=job_id,
                                      downtime_s=downtime)
        new = TunedJob(job_id, job.spec, replace(job.settings, interval_ms=target))
        return RetuneOutcome(entry, new, "verified", downtime)

    @staticmethod
    def _upgraded(status: DeploymentStatus, target_ms: int) -> bool:
        return (status.reconciled_interval_ms == target_ms and status.lifecycle_state in SETTLED
                and status.job_state == "RUNNING")

    def _roll_back(self, entry: Retune, job: TunedJob, status: DeploymentStatus) -> RetuneOutcome:
        """The operator could not run the new spec: put the previous interval back in the spec."""
        self._api.patch_configuration(self._namespace, self._name,
                                      {INTERVAL_KEY: format_interval(entry.from_interval_ms)})
        step: Literal["rolled-back"] = "rolled-back"
        entry = self._journal.advance(entry.retune_id, step, self._wall_ms(),
                                      note=f"rollback: operator reported {status.lifecycle_state}"
                                           f"{': ' + status.error[:300] if status.error else ''}; "
                                           f"interval {format_interval(entry.from_interval_ms)} patched back")
        return RetuneOutcome(entry, job, step, None)
