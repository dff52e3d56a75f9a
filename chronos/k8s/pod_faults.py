"""Deleting a TaskManager pod of a FlinkDeployment: the Kubernetes form of a TaskManager loss.

The Kubernetes API is reached through `PodApi`, a two-method wrapper of ours, so the fault is tested
against a fake of that wrapper; `KubePodApi` is the real one over the API server's pod endpoints
(chronos.k8s.kube_api: bounded exchanges, replies read through a schema).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from chronos.clock import wall_ms
from chronos.errors import ChronosError
from chronos.k8s.kube_api import KubeApi, kube_call, namespaced
from chronos.k8s.resources import listed_items, pod
from chronos.model import FaultRecord


@dataclass(frozen=True)
class PodInfo:
    name: str
    phase: str
    created_s: float


class PodApi(Protocol):
    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]: ...
    def delete_pod(self, namespace: str, name: str, grace_period_s: int) -> None: ...


class KubePodApi:
    """PodApi over the API server's pod endpoints (namespace-scoped calls only; chronos.k8s.kube_api)."""

    def __init__(self, api: KubeApi) -> None:
        self._api = api

    @classmethod
    def from_kubeconfig(cls) -> KubePodApi:
        return cls(KubeApi.from_environment())

    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]:
        what = f"list pods {label_selector} in {namespace}"
        path = namespaced("/api/v1", namespace, "pods")
        reply = kube_call(what, lambda: self._api.request("GET", path, what, params={"labelSelector": label_selector}))
        pods = [pod(item, f"item {i} of the pods in {namespace}") for i, item in
                enumerate(listed_items(reply, f"the list of pods in {namespace}"))]
        return [PodInfo(p.metadata.name, p.status.phase or "Unknown", _created_s(p.metadata.creation_timestamp))
                for p in pods]

    def delete_pod(self, namespace: str, name: str, grace_period_s: int) -> None:
        what = f"delete pod {namespace}/{name}"
        path = namespaced("/api/v1", namespace, "pods", name)
        kube_call(what, lambda: self._api.request("DELETE", path, what, body={"gracePeriodSeconds": grace_period_s}))


def _created_s(timestamp: str | None) -> float:
    """An RFC 3339 creation time (`2026-12-07T10:00:00Z`) in seconds; 0 for none or one that is not a time."""
    if not timestamp:
        return 0.0
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


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
