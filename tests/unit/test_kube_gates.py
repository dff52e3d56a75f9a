"""What chronos takes from Kubernetes is checked before it is used: names are Kubernetes names (they become the API
server's URL paths), a FlinkDeployment is read through its schema (one line naming the field), one unreadable item of a
list does not hide the others, a deployment's interval is bounded as the CLI bounds one, and a kubeconfig is read like
every other file (the one reader, no aliases, its file references checked) before the kubernetes library sees it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from chronos.errors import InvalidInput, StackError
from chronos.k8s.flink_deployment import INTERVAL_KEY, DeploymentStatus, KubeDeploymentApi
from chronos.k8s.kube_api import KubeApi
from chronos.k8s.kube_config import KubeConnection, kubeconfig_paths, load_connection, read_kubeconfig
from chronos.model import check_kube_name, check_kube_namespace
from tests.support.fake_operator import FakeOperator, changed, job_id


@pytest.mark.parametrize("name", ["..", "", "a/b", "a?watch=true", "UPPER", "-a", "a-", "a_b", "a" * 64, "a.b"])
def test_a_namespace_is_an_rfc_1123_label(name: str) -> None:
    with pytest.raises(InvalidInput, match="is not a Kubernetes namespace"):
        check_kube_namespace(name)


@pytest.mark.parametrize("name", ["..", "", "../../api", "a/b", "Fleet", "a..b", ".a", "a" * 254])
def test_an_object_name_is_an_rfc_1123_subdomain(name: str) -> None:
    with pytest.raises(InvalidInput, match="is not a Kubernetes object name"):
        check_kube_name(name)


def test_good_names_pass() -> None:
    assert check_kube_namespace("streaming-2") == "streaming-2"
    assert check_kube_name("fleet.v2-a") == "fleet.v2-a" and check_kube_name("a" * 253) == "a" * 253


def resource(**changes: Any) -> dict[str, Any]:
    return changed(FakeOperator().resource, **changes)


@pytest.mark.parametrize(("changes", "says"), [
    ({"metadata": "fleet"}, "metadata"),
    ({"metadata__annotations": {"chronos/tune": True}}, "annotations"),
    ({"spec__flinkConfiguration": ["a"]}, "flinkConfiguration"),
    ({"status": "RUNNING"}, "status"),
    ({"status__jobStatus": {"state": "RUNNING", "jobId": "../jars"}}, "status.jobStatus.jobId: '../jars' is not a Flink job id"),
    ({"status__reconciliationStatus": {"lastReconciledSpec": "{not json"}}, "lastReconciledSpec is not valid JSON"),
    ({"status__reconciliationStatus": {"lastReconciledSpec": "[" * 100 + "]" * 100}}, "nests deeper"),
    ({"status__reconciliationStatus": {"lastReconciledSpec": '{"flinkConfiguration": 5}'}}, "not a mapping"),
    ({"spec__flinkConfiguration": {INTERVAL_KEY: "9" * 30}}, "not a duration chronos takes"),
    ({"spec__flinkConfiguration": {INTERVAL_KEY: "-5s"}}, "not a duration chronos takes"),
    ({"spec__flinkConfiguration": {INTERVAL_KEY: {"nested": 1}}}, "flinkConfiguration"),
    ({"metadata__name": "Fleet/../x"}, "Kubernetes object name"),
])
def test_a_deployment_not_shaped_as_the_operator_shapes_one_is_one_line_naming_the_field(
        changes: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidInput, match=says.replace("(", r"\(")) as raised:
        DeploymentStatus.from_resource(resource(**changes))
    assert "\n" not in str(raised.value)


def test_a_deployment_interval_is_read_as_the_operator_writes_it() -> None:
    assert DeploymentStatus.from_resource(resource(spec__flinkConfiguration={INTERVAL_KEY: "2 min"})).interval_ms == 120_000
    assert DeploymentStatus.from_resource(resource(spec__flinkConfiguration={INTERVAL_KEY: 45000})).interval_ms == 45_000


def api_serving(reply: Any) -> KubeDeploymentApi:
    return KubeDeploymentApi(KubeApi(KubeConnection("http://api.test", True, dict),
                                     transport=httpx.MockTransport(lambda r: httpx.Response(200, json=reply))))


def test_one_unreadable_item_of_a_list_is_said_and_the_others_are_listed() -> None:
    good = FakeOperator().resource
    listed = api_serving({"items": [{"metadata": 5}, good, {"metadata": {"name": "x"}, "status": {"jobStatus": 3}}]}) \
        .list("streaming")
    assert [item["metadata"]["name"] for item in listed.items] == ["fleet"]
    assert len(listed.unreadable) == 2 and "item 0 of the FlinkDeployments in streaming" in listed.unreadable[0]
    with pytest.raises(InvalidInput, match="items"):
        api_serving({"items": {"a": 1}}).list("streaming")
    assert DeploymentStatus.from_resource(api_serving(good).get("streaming", "fleet")).job_id == job_id(0)


def test_an_api_server_error_is_one_line_with_its_own_message_and_a_name_never_reaches_it_unchecked() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"kind": "Status", "code": 403, "message": "forbidden:\nno patch for you"})

    api = KubeDeploymentApi(KubeApi(KubeConnection("http://api.test", True, dict), transport=httpx.MockTransport(refuse)))
    with pytest.raises(StackError, match=r"Kubernetes refused to get FlinkDeployment streaming/fleet: 403 Forbidden "
                                         r"\(forbidden: no patch for you\)"):
        api.get("streaming", "fleet")
    with pytest.raises(InvalidInput, match="is not a Kubernetes namespace"):
        api.list("../..")


KUBECONFIG = """apiVersion: v1
kind: Config
current-context: here
clusters: [{name: here, cluster: {server: 'https://10.0.0.1:6443', certificate-authority: ca.pem}}]
users: [{name: me, user: {token: t0k}}]
contexts: [{name: here, context: {cluster: here, user: me}}]
"""


def test_a_kubeconfig_is_read_like_every_file_and_its_file_references_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(KUBECONFIG)
    (tmp_path / "ca.pem").write_text("x")
    merged = read_kubeconfig([config])
    assert merged["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "ca.pem"), "made absolute"
    (tmp_path / "ca.pem").unlink()
    os.mkfifo(tmp_path / "ca.pem")
    with pytest.raises(InvalidInput, match=r"certificate-authority .* is a FIFO"):
        read_kubeconfig([config])
    for text, says in (("a: &x [1]\nb: *x\n", "YAML alias"), ("clusters: " + "[" * 80 + "]" * 80, "nests deeper"),
                       ("clusters: 5\n", "clusters"), ("- a\n", "must be a mapping")):
        config.write_text(text)
        with pytest.raises(InvalidInput, match=says):
            read_kubeconfig([config])


def test_kubeconfigs_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("clusters: [{name: c, cluster: {server: 'http://first:1'}}]\n")
    second.write_text(KUBECONFIG.replace("certificate-authority: ca.pem", "insecure-skip-tls-verify: true")
                      .replace("name: here, cluster", "name: c, cluster").replace("cluster: here", "cluster: c"))
    merged = read_kubeconfig(kubeconfig_paths({"KUBECONFIG": f"{first}:{second}:"}))
    assert [c["cluster"]["server"] for c in merged["clusters"]] == ["http://first:1"], "the first to name it wins"
    assert merged["current-context"] == "here"


def test_no_kubeconfig_and_no_pod_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no Kubernetes credentials: not in a pod, and no kubeconfig at"):
        load_connection({"KUBECONFIG": str(tmp_path / "none")})


def test_the_token_is_a_secret_in_force_as_soon_as_it_is_read(tmp_path: Path) -> None:
    from chronos.errors import said

    config = tmp_path / "config"
    config.write_text(KUBECONFIG.replace("https://10.0.0.1:6443', certificate-authority: ca.pem", "http://api:1'")
                      .replace("t0k", "kube-token-e2e4"))
    connection = load_connection({"KUBECONFIG": str(config)})
    assert connection.server == "http://api:1" and connection.authorization() == {"Authorization": "Bearer kube-token-e2e4"}
    assert "kube-token-e2e4" not in said(json.dumps({"message": "token kube-token-e2e4 denied"}))
