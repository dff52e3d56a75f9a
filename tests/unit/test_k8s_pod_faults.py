"""The Kubernetes TaskManager-pod fault, against a fake of our own PodApi wrapper (no cluster here),
and the real wrapper's translation to CoreV1Api calls against a recording stand-in."""

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from chronos.chaos.faults import FaultInjector
from chronos.errors import ChronosError
from chronos.k8s.pod_faults import CoreV1PodApi, DeleteTaskManagerPod, PodInfo, taskmanager_selector


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


def test_core_v1_wrapper_makes_namespaced_calls() -> None:
    calls: list[tuple[str, tuple[object, ...], dict[str, object]]] = []
    created = datetime(2026, 1, 1, tzinfo=UTC)

    class CoreV1:
        def list_namespaced_pod(self, *args: object, **kwargs: object) -> object:
            calls.append(("list", args, kwargs))
            pod = SimpleNamespace(metadata=SimpleNamespace(name="tm-a", creation_timestamp=created),
                                  status=SimpleNamespace(phase="Running"))
            return SimpleNamespace(items=[pod])

        def delete_namespaced_pod(self, *args: object, **kwargs: object) -> None:
            calls.append(("delete", args, kwargs))

    api = CoreV1PodApi(CoreV1())
    assert api.list_pods("flink", taskmanager_selector("d")) == [PodInfo("tm-a", "Running", created.timestamp())]
    api.delete_pod("flink", "tm-a", 0)
    timeout = {"_request_timeout": (5, 30)}  # never a call without a deadline
    assert calls == [("list", ("flink",), {"label_selector": "app=d,component=taskmanager", **timeout}),
                     ("delete", ("tm-a", "flink"), {"grace_period_seconds": 0, **timeout})]
