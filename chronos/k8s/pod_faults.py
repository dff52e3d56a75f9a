"""Deleting a TaskManager pod of a FlinkDeployment: the Kubernetes form of a TaskManager loss.

The Kubernetes API is reached through `PodApi`, a two-method wrapper of ours, so the fault is tested
against a fake of that wrapper; `CoreV1PodApi` is the thin real implementation over the official
client. No cluster is reachable from this project's machines, so the real path is not exercised in
tests here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chronos.clock import wall_ms
from chronos.errors import ChronosError
from chronos.k8s.kube_config import REQUEST_TIMEOUT, kube_call
from chronos.model import FaultRecord


@dataclass(frozen=True)
class PodInfo:
    name: str
    phase: str
    created_s: float


class PodApi(Protocol):
    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]: ...
    def delete_pod(self, namespace: str, name: str, grace_period_s: int) -> None: ...


class CoreV1PodApi:
    """PodApi over kubernetes.client.CoreV1Api (namespace-scoped calls only)."""

    def __init__(self, core_v1: Any) -> None:
        self._api = core_v1

    @classmethod
    def from_kubeconfig(cls) -> CoreV1PodApi:
        from kubernetes import client

        from chronos.k8s.kube_config import load_kube_config

        load_kube_config()
        return cls(client.CoreV1Api())

    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]:
        pods = kube_call(f"list pods {label_selector} in {namespace}", lambda: self._api.list_namespaced_pod(
            namespace, label_selector=label_selector, _request_timeout=REQUEST_TIMEOUT))
        return [
            PodInfo(p.metadata.name, p.status.phase or "Unknown",
                    p.metadata.creation_timestamp.timestamp() if p.metadata.creation_timestamp else 0.0)
            for p in pods.items
        ]

    def delete_pod(self, namespace: str, name: str, grace_period_s: int) -> None:
        kube_call(f"delete pod {namespace}/{name}", lambda: self._api.delete_namespaced_pod(
            name, namespace, grace_period_seconds=grace_period_s, _request_timeout=REQUEST_TIMEOUT))


def taskmanager_selector(deployment: str) -> str:
    """The labels the Flink Kubernetes Operator (native mode) puts on a deployment's TaskManager pods."""
    return f"app={deployment},component=taskmanager"


class DeleteTaskManagerPod:
    """Delete one running TaskManager pod (grace 0: a crash, not a drain). The operator's
    Deployment/ResourceManager replaces it, so rollback has nothing to undo."""

    def __init__(self, api: PodApi, namespace: str, deployment: str, *, label_selector: str | None = None,
                 pick: str = "oldest", seed: int = 0, grace_period_s: int = 0,
                 wall_ms: Callable[[], int] = wall_ms) -> None:
        if pick not in {"oldest", "random"}:
            raise ValueError("pick is 'oldest' or 'random'")
        self._api = api
        self._namespace = namespace
        self._selector = label_selector or taskmanager_selector(deployment)
        self._pick = pick
        self._rng = random.Random(seed)
        self._grace = grace_period_s
        self._wall_ms = wall_ms

    def inject(self) -> FaultRecord:
        running = [p for p in self._api.list_pods(self._namespace, self._selector) if p.phase == "Running"]
        if not running:
            raise ChronosError(f"no running TaskManager pod matches {self._selector!r} in namespace {self._namespace}")
        victim = min(running, key=lambda p: (p.created_s, p.name)) if self._pick == "oldest" else self._rng.choice(running)
        wall, mono = self._wall_ms(), time.monotonic()
        self._api.delete_pod(self._namespace, victim.name, self._grace)
        return FaultRecord("delete-taskmanager-pod", f"{self._namespace}/{victim.name}", wall, mono,
                           f"deleted with grace {self._grace} s; {len(running) - 1} other TaskManager pods running")

    def rollback(self) -> None:
        return None
