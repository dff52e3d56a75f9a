"""The few REST calls chronos makes of a Kubernetes API server (get, list and merge-patch a FlinkDeployment; list and
delete pods), each one bounded exchange (chronos.bounded_http: a whole-exchange deadline, a size cap, a compressed
reply inflated no further than the cap, JSON no deeper than 32 levels).

Hand-written over httpx rather than through the kubernetes library's API client: that client has per-read timeouts
only (a list trickling a byte a second, or an endless chunked one, holds it for ever) and inflates a reply whole
before anything can cap it. The library still does what it does well: the kubeconfig and in-cluster credentials
(chronos.k8s.kube_config). Paths are built from names checked as Kubernetes names (RFC 1123), so no name can
address another resource (`..`, `a/b`, `a?watch=true`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from chronos.backoff import Backoff
from chronos.bounded_http import BoundedClient, DeadlinePassed, Reply, ReplyRefused
from chronos.errors import StackError
from chronos.k8s.kube_config import KubeConnection, load_connection
from chronos.model import check_kube_name, check_kube_namespace
from chronos.terminal_text import one_line

T = TypeVar("T")
# One exchange with the API server, connect to last byte: it answers in milliseconds, a list of a few hundred
# FlinkDeployments in well under a second; past this it is a server in distress or a hostile one.
DEADLINE_S = 10.0
MAX_REPLY_BYTES = 32 << 20  # a list of a thousand FlinkDeployments with their last reconciled specs
# A refused-for-now answer (429, 5xx) or an unreachable API server is asked again this often, then said. A reply that
# did not come whole within the deadline, or that is not one chronos reads, is said at once: asking again would only
# wait as long again.
RETRY = Backoff(first_s=1.0, factor=2.0, max_s=8.0)
ATTEMPTS = 3


class KubeRefused(StackError):
    """The API server answered with an error status."""

    def __init__(self, what: str, status: int, reason: str) -> None:
        super().__init__(f"Kubernetes refused to {what}: {status} {reason}")
        self.status = status


class KubeUnreachable(StackError):
    """No answer from the API server (refused, reset, no route)."""


def kube_call(what: str, call: Callable[[], T], sleep: Callable[[float], None] = time.sleep,
              rng: random.Random | None = None) -> T:
    """One Kubernetes API call, a transient failure (unreachable, 429, 5xx) asked again with backoff and jitter first;
    every failure one line."""
    rng = rng or random.Random()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call()
        except KubeRefused as exc:
            if not (exc.status == 429 or exc.status >= 500) or attempt == ATTEMPTS:
                raise
        except (KubeUnreachable, OSError) as exc:
            if attempt == ATTEMPTS:
                detail = exc if isinstance(exc, KubeUnreachable) else type(exc).__name__
                raise StackError(f"cannot reach Kubernetes to {what}: {detail} ({ATTEMPTS} attempts)") from None
        sleep(RETRY.delay(attempt, rng))
    raise AssertionError("unreachable")  # pragma: no cover


def _reason(reply: Reply) -> str:
    """The status's reason phrase and a Status object's message (the API server's own words); one line, bounded."""
    phrase = httpx.codes.get_reason_phrase(reply.status_code) or "error"
    try:
        body = reply.json("the API server's error")
    except ReplyRefused:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    return f"{phrase} ({one_line(message)[:200]})" if isinstance(message, str) and message.strip() else phrase


class KubeApi:
    """Bounded JSON exchanges with one API server."""

    def __init__(self, connection: KubeConnection, deadline_s: float = DEADLINE_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._connection = connection
        self._http = BoundedClient(connection.server, deadline_s=deadline_s, max_bytes=MAX_REPLY_BYTES,
                                   transport=transport, verify=connection.tls)

    @classmethod
    def from_environment(cls) -> KubeApi:
        return cls(load_connection())

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, what: str, *, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None, content_type: str = "application/json") -> Any:
        """The reply's JSON, or one line: refused (with the API server's reason), not answered whole, not JSON."""
        headers = {"Accept": "application/json", **self._connection.authorization()}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            reply = self._http.request(method, path, headers=headers, params=params,
                                       content=None if body is None else _json_bytes(body))
        except DeadlinePassed as exc:
            raise StackError(f"Kubernetes did not answer whole to {what} ({exc})") from None
        except ReplyRefused as exc:
            raise StackError(f"Kubernetes's reply to {what} is refused: {exc}") from None
        except httpx.RemoteProtocolError as exc:
            raise StackError(f"what answers at {self._connection.server} did not reply to {what} in HTTP chronos reads "
                             f"({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise KubeUnreachable(type(exc).__name__) from None
        if reply.status_code >= 400:
            raise KubeRefused(what, reply.status_code, _reason(reply))
        try:
            return reply.json(f"Kubernetes's reply to {what}")
        except ReplyRefused as exc:
            raise StackError(str(exc)) from None


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    import json

    return json.dumps(body, allow_nan=False).encode()


def namespaced(group_path: str, namespace: str, plural: str, name: str | None = None) -> str:
    """`<group_path>/namespaces/<namespace>/<plural>[/<name>]`, the names checked first."""
    path = f"{group_path}/namespaces/{check_kube_namespace(namespace)}/{plural}"
    return path if name is None else f"{path}/{check_kube_name(name)}"
