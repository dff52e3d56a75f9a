"""On Kubernetes, the jobs to tune found rather than listed (`chronos tune --discover NAMESPACE`): every
FlinkDeployment that carries `chronos/tune: "true"` is tuned, as the Flink Kubernetes Operator's autoscaler is switched
on per deployment (`job.autoscaler.enabled`); one that loses the annotation, or is deleted, is let go.

Its targets and policy are further annotations, one TunePolicy field each under the same prefix (kebab or snake
case), over the controller's defaults:

    metadata:
      annotations:
        chronos/tune: "true"
        chronos/recovery-s: "60"
        chronos/latency-p99-ms: "5000"
        chronos/rest-url: http://fleet-rest.streaming:8081   # default: the operator's REST service of it

A deployment whose annotations do not make a valid policy (an unknown field, no recovery target, a minimum above the
maximum) is refused in one line naming it, and the others are tuned: one team's typo does not stop the others' jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from chronos.errors import InvalidInput
from chronos.tune.job_targets import JobTarget, job_targets

PREFIX = "chronos/"
SWITCH = PREFIX + "tune"
REST_URL = PREFIX + "rest-url"


@dataclass(frozen=True)
class Listed:
    """A namespace's FlinkDeployments as the API returned them, each read through the adapter's schema; one line for
    each item that could not be (it is not tuned, and the others are)."""

    items: tuple[Mapping[str, Any], ...]
    unreadable: tuple[str, ...] = ()


class DeploymentLister(Protocol):
    """The namespace's FlinkDeployments (chronos.k8s's KubeDeploymentApi)."""

    def list(self, namespace: str) -> Listed: ...


@dataclass(frozen=True)
class Discovered:
    targets: tuple[JobTarget, ...]
    refused: tuple[str, ...]  # one line per annotated deployment that cannot be tuned as annotated


def operator_rest_url(name: str, namespace: str) -> str:
    """The REST service the Flink Kubernetes Operator makes for a FlinkDeployment (`<name>-rest`, port 8081)."""
    return f"http://{name}-rest.{namespace}:8081"


def discovered(resources: Iterable[Mapping[str, Any]], defaults: Mapping[str, Any]) -> Discovered:
    """The FlinkDeployments (as the adapter read them) switched on for chronos, each as a JobTarget named
    `<namespace>.<name>` (unique: a namespace holds no dot); the ones that cannot be, each said in one line."""
    targets: list[JobTarget] = []
    refused: list[str] = []
    seen: set[tuple[str, str]] = set()
    for resource in resources:
        metadata = resource.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        if str(annotations.get(SWITCH, "")).strip().lower() != "true":
            continue
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace") or "default")
        if (namespace, name) in seen:
            refused.append(f"FlinkDeployment {namespace}/{name} is listed twice; it is tuned once")
            continue
        seen.add((namespace, name))
        policy = {key[len(PREFIX):]: value for key, value in annotations.items()
                  if key.startswith(PREFIX) and key not in (SWITCH, REST_URL)}
        entry = {"name": f"{namespace}.{name}", "flink_deployment": name, "namespace": namespace,
                 "rest_url": annotations.get(REST_URL) or operator_rest_url(name, namespace), "policy": policy}
        try:
            targets += job_targets({"defaults": dict(defaults), "jobs": [entry]},
                                   f"FlinkDeployment {namespace}/{name}", Path("."))
        except InvalidInput as exc:
            refused.append(str(exc).replace(f"FlinkDeployment {namespace}/{name}: job {namespace}.{name}:",
                                            f"FlinkDeployment {namespace}/{name}:"))
    return Discovered(tuple(targets), tuple(refused))
