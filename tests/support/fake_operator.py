"""The FlinkDeployment realizer's fake: chronos's own two-method DeploymentApi wrapper over a deployment the
operator reconciles. Held to the same contract as the real wrapper over the kubernetes client
(tests/contracts/test_deployment_api_contract.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from chronos.errors import StackError
from chronos.k8s.flink_deployment import INTERVAL_KEY
from chronos.tune.discovery import Listed


def changed(resource: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`resource` with each change put at its path (`status__jobStatus="x"` sets resource["status"]["jobStatus"])."""
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = resource
        for part in parents:
            target = target[part]
        target[last] = value
    return resource


def job_id(generation: int) -> str:
    """The Flink job id the operator reports for its deployment's `generation`-th job (32 hex digits, as Flink's)."""
    return f"{generation:032x}"


class FakeOperator:
    """A FlinkDeployment and the operator reconciling it: a spec change takes `upgrade_polls` reads to
    go UPGRADING -> DEPLOYED with a new job id, or ends FAILED when `fails` is set."""

    def __init__(self, upgrade_mode: str = "savepoint", interval: str = "30s", upgrade_polls: int = 3) -> None:
        self.resource: dict[str, Any] = {
            "metadata": {"name": "fleet", "namespace": "streaming"},
            "spec": {"job": {"upgradeMode": upgrade_mode}, "flinkConfiguration": {INTERVAL_KEY: interval}},
            "status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING", "jobId": job_id(0)},
                       "reconciliationStatus": {"lastReconciledSpec": json.dumps(
                           {"flinkConfiguration": {INTERVAL_KEY: interval}})}},
        }
        self.upgrade_polls = upgrade_polls
        self.fails = False
        self.patches: list[Mapping[str, str]] = []
        self._pending = 0
        self._generation = 0

    def get(self, namespace: str, name: str) -> Mapping[str, Any]:
        self._found(namespace, name)
        if self._pending:
            self._pending -= 1
            status = self.resource["status"]
            if self._pending == 0:
                if self.fails:
                    status.update(lifecycleState="FAILED", error="restore failed")
                    status["jobStatus"]["state"] = "FAILED"
                else:
                    self._generation += 1
                    status.update(lifecycleState="DEPLOYED")
                    status["jobStatus"] = {"state": "RUNNING", "jobId": job_id(self._generation)}
                    status["reconciliationStatus"]["lastReconciledSpec"] = json.dumps(
                        {"flinkConfiguration": dict(self.resource["spec"]["flinkConfiguration"])})
        return copy.deepcopy(self.resource)

    def list(self, namespace: str) -> Listed:
        return Listed((self.get("streaming", "fleet"),) if namespace == "streaming" else ())

    def patch_configuration(self, namespace: str, name: str, configuration: Mapping[str, str]) -> None:
        self._found(namespace, name)
        self.patches.append(dict(configuration))
        self.resource["spec"]["flinkConfiguration"].update(configuration)
        self.resource["status"].update(lifecycleState="UPGRADING")
        self.resource["status"]["jobStatus"]["state"] = "RECONCILING"
        self._pending = self.upgrade_polls

    @staticmethod
    def _found(namespace: str, name: str) -> None:
        """The one deployment there is, streaming/fleet; any other is not found, as the API server says it."""
        if (namespace, name) != ("streaming", "fleet"):
            raise StackError(f"Kubernetes refused to reach FlinkDeployment {namespace}/{name}: 404 Not Found")
