"""One set of assertions about `DeploymentApi` (what the FlinkDeployment realizer asks of Kubernetes), held by the fake
operator the realizer's unit tests run against and by the real `KubeDeploymentApi` (bounded REST exchanges, replies read
through the FlinkDeployment schema), talking to an API server's FlinkDeployment endpoints on 127.0.0.1
(tests/support/fake_kube_api.py: no cluster is reachable here): a deployment reads back with its spec and status; a
patch changes only the keys it names, as a merge patch, and the next read shows them; `apply_configuration` patches
only what differs; a deployment that does not exist is one line naming it, not a hang or a traceback."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from chronos.errors import StackError
from chronos.k8s.flink_deployment import INTERVAL_KEY, DeploymentApi, apply_configuration
from tests.support.fake_operator import FakeOperator, job_id

NAMESPACE, NAME = "streaming", "fleet"
OTHER_KEY = "state.backend.type"


@dataclass
class Subject:
    api: DeploymentApi
    content_types: list[str] | None = None  # what the real client's patches said they were (the API server's view)


def _deployment() -> dict[str, Any]:
    """A FlinkDeployment as the operator's v1beta1 CRD shapes it (the fields chronos reads)."""
    return {
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {"job": {"upgradeMode": "savepoint", "jarURI": "local:///opt/flink/job.jar"},
                 "flinkConfiguration": {INTERVAL_KEY: "30s", OTHER_KEY: "rocksdb"}},
        "status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING", "jobId": job_id(0)},
                   "reconciliationStatus": {"lastReconciledSpec": json.dumps(
                       {"flinkConfiguration": {INTERVAL_KEY: "30s", OTHER_KEY: "rocksdb"}})}},
    }


@pytest.fixture(params=["fake", "api-server"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "fake":
        operator = FakeOperator(upgrade_polls=1)
        operator.resource["spec"]["flinkConfiguration"][OTHER_KEY] = "rocksdb"
        yield Subject(operator)
        return
    from chronos.k8s.flink_deployment import KubeDeploymentApi
    from chronos.k8s.kube_api import KubeApi
    from chronos.k8s.kube_config import KubeConnection
    from tests.support.fake_kube_api import serving

    with serving({(NAMESPACE, NAME): copy.deepcopy(_deployment())}) as (url, server):
        api = KubeApi(KubeConnection(url, True, dict))
        try:
            yield Subject(KubeDeploymentApi(api), server.content_types)
        finally:
            api.close()


def test_a_deployment_reads_back_with_its_configuration_and_the_operator_s_status(subject: Subject) -> None:
    resource = subject.api.get(NAMESPACE, NAME)
    assert resource["spec"]["flinkConfiguration"][INTERVAL_KEY] == "30s"
    assert resource["spec"]["job"]["upgradeMode"] == "savepoint"
    assert resource["status"]["jobStatus"]["state"] == "RUNNING"


def test_a_patch_changes_only_the_keys_it_names_and_the_next_read_shows_them(subject: Subject) -> None:
    subject.api.patch_configuration(NAMESPACE, NAME, {INTERVAL_KEY: "10s", "heartbeat.timeout": "20s"})
    configuration = subject.api.get(NAMESPACE, NAME)["spec"]["flinkConfiguration"]
    assert configuration[INTERVAL_KEY] == "10s" and configuration["heartbeat.timeout"] == "20s"
    assert configuration[OTHER_KEY] == "rocksdb", "a merge patch: keys it does not name stay"
    if subject.content_types is not None:  # the real client: the API server was told it is a merge patch
        assert subject.content_types == ["application/merge-patch+json"], subject.content_types


def test_only_what_differs_is_patched(subject: Subject) -> None:
    assert apply_configuration(subject.api, NAMESPACE, NAME, {INTERVAL_KEY: "30s"}) == {}
    assert apply_configuration(subject.api, NAMESPACE, NAME, {INTERVAL_KEY: "30s", "heartbeat.timeout": "20s"}) \
        == {"heartbeat.timeout": "20s"}


def test_a_deployment_that_does_not_exist_is_one_line_naming_it(subject: Subject) -> None:
    with pytest.raises(StackError, match=r"FlinkDeployment streaming/nope: 404 Not Found") as raised:
        subject.api.get(NAMESPACE, "nope")
    assert "\n" not in str(raised.value)
    with pytest.raises(StackError, match=r"FlinkDeployment streaming/nope: 404 Not Found"):
        subject.api.patch_configuration(NAMESPACE, "nope", {INTERVAL_KEY: "10s"})


def test_a_namespace_lists_its_deployments_whole(subject: Subject) -> None:
    subject.api.patch_configuration(NAMESPACE, NAME, {INTERVAL_KEY: "20s"})
    listed = subject.api.list(NAMESPACE).items  # type: ignore[attr-defined]
    assert [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in listed] == [(NAMESPACE, NAME)]
    assert listed[0]["spec"]["flinkConfiguration"][INTERVAL_KEY] == "20s"
    assert subject.api.list("elsewhere").items == ()  # type: ignore[attr-defined]
