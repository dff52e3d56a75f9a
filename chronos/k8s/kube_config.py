"""One way to reach the cluster: in-cluster credentials when chronos runs as a pod (the Helm chart's
service account), the user's kubeconfig otherwise."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from chronos.backoff import Backoff
from chronos.errors import InvalidInput, StackError

T = TypeVar("T")
# Every API call: 5 s to connect, 30 s for the answer (the client waits forever by default).
REQUEST_TIMEOUT = (5, 30)
# A refused-for-now answer (429, 5xx) or an unreachable API server is tried again this often, then said.
RETRY = Backoff(first_s=1.0, factor=2.0, max_s=8.0)
ATTEMPTS = 3


def load_kube_config() -> None:
    from kubernetes import config

    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        try:
            config.load_kube_config()  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            raise InvalidInput(f"no Kubernetes credentials: not in a pod and no usable kubeconfig ({exc})") from exc


def kube_call(what: str, call: Callable[[], T], sleep: Callable[[float], None] = time.sleep,
              rng: random.Random | None = None) -> T:
    """One Kubernetes API call, its failures (refused, unreachable, not found) as one-line errors; a
    transient one (unreachable, 429, 5xx) is tried again with backoff and jitter first."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    rng = rng or random.Random()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call()
        except ApiException as exc:
            transient = exc.status == 429 or (exc.status or 0) >= 500
            if not transient or attempt == ATTEMPTS:
                raise StackError(f"Kubernetes refused to {what}: {exc.status} {exc.reason}") from exc
        except (HTTPError, OSError) as exc:
            if attempt == ATTEMPTS:
                raise StackError(f"cannot reach Kubernetes to {what}: {type(exc).__name__} "
                                 f"({ATTEMPTS} attempts)") from exc
        sleep(RETRY.delay(attempt, rng))
    raise AssertionError("unreachable")  # pragma: no cover
