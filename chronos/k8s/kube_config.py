"""One way to reach the cluster: in-cluster credentials when chronos runs as a pod (the Helm chart's
service account), the user's kubeconfig otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from chronos.errors import InvalidInput, StackError

T = TypeVar("T")


def load_kube_config() -> None:
    from kubernetes import config

    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        try:
            config.load_kube_config()  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            raise InvalidInput(f"no Kubernetes credentials: not in a pod and no usable kubeconfig ({exc})") from exc


def kube_call(what: str, call: Callable[[], T]) -> T:
    """One Kubernetes API call, its failures (refused, unreachable, not found) as one-line errors."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        return call()
    except ApiException as exc:
        raise StackError(f"Kubernetes refused to {what}: {exc.status} {exc.reason}") from exc
    except (HTTPError, OSError) as exc:
        raise StackError(f"cannot reach Kubernetes to {what}: {type(exc).__name__}") from exc
