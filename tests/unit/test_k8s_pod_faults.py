"""The Kubernetes TaskManager-pod fault, against a fake of our own PodApi wrapper, and the real wrapper's REST calls
against a recording stand-in of the API server."""

from datetime import UTC, datetime

import httpx
import pytest

from chronos.chaos.faults import FaultInjector
from chronos.errors import ChronosError
from chronos.k8s.kube_api import KubeApi
from chronos.k8s.kube_config import KubeConnection
from chronos.k8s.pod_faults import DeleteTaskManagerPod, KubePodApi, PodInfo, taskmanager_selector


class FakePods:
    def __init__(self, pods: list[PodInfo]) -> None:
        self.pods = pods
        self.deleted: list[tuple[str, str, int]] = []
        self.selectors: list[str] = []

    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]:
        self.selectors.append(label_selector)
        return list(self.pods)

    def delete_pod(self, namespace: str, name: str, grace_period_s: int) -> None:
        self.deleted.append((namespace, name, grace_period_s))


def test_deletes_the_oldest_running_taskmanager_pod_at_once() -> None:
    api = FakePods([PodInfo("tm-2", "Running", 20.0), PodInfo("tm-1", "Running", 10.0), PodInfo("tm-0", "Pending", 1.0)])
    fault: FaultInjector = DeleteTaskManagerPod(api, "flink", "vehicle-stats", wall_ms=lambda: 123)
    record = fault.inject()
    assert api.selectors == ["app=vehicle-stats,component=taskmanager"]
    assert api.deleted == [("flink", "tm-1", 0)]
    assert (record.kind, record.target, record.injected_wall_ms) == ("delete-taskmanager-pod", "flink/tm-1", 123)
    fault.rollback()  # the operator replaces the pod: nothing to undo


def test_random_pick_is_seeded() -> None:
    pods = [PodInfo(f"tm-{i}", "Running", float(i)) for i in range(5)]
    picks = []
    for _ in range(2):
        api = FakePods(pods)
        DeleteTaskManagerPod(api, "ns", "d", pick="random", seed=42).inject()
        picks.append(api.deleted[0][1])
    assert picks[0] == picks[1]


def test_no_running_pod_is_a_clear_error() -> None:
    with pytest.raises(ChronosError, match="no running TaskManager pod matches"):
        DeleteTaskManagerPod(FakePods([PodInfo("tm-0", "Pending", 0.0)]), "ns", "d").inject()


def test_the_real_wrapper_makes_namespaced_calls_each_with_a_deadline() -> None:
    seen: list[tuple[str, str, str]] = []

    def api_server(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.url.query.decode() or request.content.decode()))
        if request.method == "GET":
            return httpx.Response(200, json={"items": [{"metadata": {"name": "tm-a", "creationTimestamp":
                                                                     "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}}]})
        return httpx.Response(200, json={"kind": "Pod"})

    api = KubePodApi(KubeApi(KubeConnection("http://api.test", True, dict), transport=httpx.MockTransport(api_server)))
    created = datetime(2026, 1, 1, tzinfo=UTC)
    assert api.list_pods("flink", taskmanager_selector("d")) == [PodInfo("tm-a", "Running", created.timestamp())]
    api.delete_pod("flink", "tm-a", 0)
    assert seen == [("GET", "/api/v1/namespaces/flink/pods", "labelSelector=app%3Dd%2Ccomponent%3Dtaskmanager"),
                    ("DELETE", "/api/v1/namespaces/flink/pods/tm-a", '{"gracePeriodSeconds": 0}')]


def test_a_pod_name_or_namespace_that_is_not_a_kubernetes_name_never_reaches_the_api_server() -> None:
    api = KubePodApi(KubeApi(KubeConnection("http://api.test", True, dict),
                             transport=httpx.MockTransport(lambda r: pytest.fail(f"sent {r.url}"))))
    for namespace, name in (("..", "tm"), ("a/b", "tm"), ("flink", "../../secrets"), ("flink", "a?watch=true")):
        with pytest.raises(ChronosError, match="is not a Kubernetes"):
            api.delete_pod(namespace, name, 0)
