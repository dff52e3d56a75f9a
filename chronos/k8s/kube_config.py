"""One way to reach the cluster: in-cluster credentials when chronos runs as a pod (the Helm chart's
service account), the user's kubeconfig otherwise."""

from __future__ import annotations


def load_kube_config() -> None:
    from kubernetes import config

    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config()  # type: ignore[no-untyped-call]
