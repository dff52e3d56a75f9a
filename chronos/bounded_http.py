"""Every HTTP exchange chronos starts (Flink's REST API, Flink's Prometheus reporters, a Prometheus server) is
bounded: a whole-exchange deadline, a cap on the reply's size, and JSON parsed only to a fixed depth.

Why: httpx's timeouts are per socket operation. A server that sends one byte every 2 s never trips a 10 s
read timeout, and hung `job list`, `status` and `tune` for ever in a hostile-input sweep; a 400 MB chunked
reply took the CLI to 894 MB; a reply nested 100,000 deep ended in a RecursionError. So every read and write
of the socket here gets the time left before the exchange's deadline as its timeout (httpcore's
`NetworkBackend` is the seam: the deadline reaches even the reading of the headers, where a trickle could
otherwise go on for hours), the body is read in pieces and dropped past the cap, and the JSON depth is
checked as the files' is (chronos.input_files). A compressed body is inflated as its bytes arrive, and no further
than the cap: chronos asks for none (`Accept-Encoding: identity`), but a server or proxy may send one anyway, and
httpx inflates each piece whole (1,827 bytes of `gzip, gzip` are a GiB), so one content coding at most is read
(gzip or deflate), by zlib with an output limit. Environment proxies are not used: chronos talks to the cluster it
is pointed at, and a proxy's transport would escape the deadline.

Hand-written over httpx/httpcore's public backend interface (no library offers a whole-request deadline for
synchronous httpx).
"""

from __future__ import annotations

import contextvars
import ssl
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from chronos.connection_security import RestSecurity
from chronos.errors import IN_FORCE, InvalidInput
from chronos.input_files import load_json

DEADLINE_S = 30.0  # a Flink REST reply comes in milliseconds; 30 s is a cluster in distress, not a slow one
MAX_REPLY_BYTES = 16 << 20  # the largest Flink reply chronos reads (a long metric list, a job's full detail) is < 1 MiB
MAX_REPLY_DEPTH = 32  # Flink's replies nest < 10 deep

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("chronos_http_deadline", default=None)


class DeadlinePassed(httpx.TimeoutException):
    """The exchange was not over by its deadline (a slow trickle, a server that never finishes)."""


class ReplyRefused(httpx.TransportError):
    """A reply too large, or not JSON chronos reads; its message is one line."""


def _left(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the exchange's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout),
                                                       local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Inflater:
    """One content coding undone as the body arrives, never producing more than `cap` + 1 bytes in all."""

    def __init__(self, coding: str, cap: int) -> None:
        self._coding, self._wbits, self._left = coding, _CODINGS[coding], cap + 1
        self._inflate = zlib.decompressobj(self._wbits)

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        try:
            while data and self._left > 0:
                piece = self._inflate.decompress(data, self._left)
                out += piece
                self._left -= len(piece)
                data = self._inflate.unconsumed_tail
                if self._inflate.eof:  # gzip may hold several members, one after the other
                    data = self._inflate.unused_data + data
                    self._inflate = zlib.decompressobj(self._wbits)
        except zlib.error:
            raise ReplyRefused(f"a reply that says it is {self._coding}-encoded, and is not") from None
        return bytes(out)


def inflater(codings: Sequence[str], cap: int) -> _Inflater | None:
    """How to read a body sent with these Content-Encoding headers: None for none (or identity), one coding undone
    under `cap`, or one line refusing the rest."""
    found = [c.strip().lower() for header in codings for c in header.split(",") if c.strip()]
    found = [c for c in found if c != "identity"]
    if not found:
        return None
    if len(found) > 1:
        raise ReplyRefused(f"a reply in {len(found)} content codings ({', '.join(c[:20] for c in found[:4])}); chronos "
                           "asks for none and undoes one at most")
    if found[0] not in _CODINGS:
        raise ReplyRefused(f"a reply in the content coding {found[0][:20]!r}, which chronos does not read (it asks for "
                           "none; gzip or deflate at most)")
    return _Inflater(found[0], cap)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport with its connection pool built on the deadline backend."""

    def __init__(self, verify: bool | ssl.SSLContext = True) -> None:
        super().__init__(verify=verify, trust_env=False)
        context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify, trust_env=False)
        self._pool = httpcore.ConnectionPool(ssl_context=context, network_backend=_DeadlineBackend())


@dataclass(frozen=True)
class Reply:
    status_code: int
    content: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self, where: str, max_depth: int = MAX_REPLY_DEPTH) -> Any:
        """The body as JSON nested at most `max_depth` deep, or ReplyRefused naming `where`."""
        try:
            return load_json(self.content, where, max_depth)
        except InvalidInput as exc:
            raise ReplyRefused(str(exc)) from None


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation inside ends by `seconds` from now (an earlier deadline already set stays)."""
    outer = _deadline.get()
    own = time.monotonic() + seconds
    token = _deadline.set(own if outer is None else min(outer, own))
    try:
        yield
    finally:
        _deadline.reset(token)


class TlsSettingsUnreadable(InvalidInput):
    """A CA file, client certificate or key given for a REST API that cannot be read or used."""


def rest_tls(security: RestSecurity | None) -> tuple[bool | ssl.SSLContext, dict[str, str]]:
    """What a client of a REST API with `security` verifies with and sends: the TLS context (the CA to trust, the
    client certificate to present) and the Authorization header, secrets read now; one line when a file is unusable."""
    if security is None or security.empty:
        return True, {}
    files = ", ".join(f for f in (security.ca_file, security.cert_file, security.key_file) if f)
    try:
        context = security.ssl_context()
    except InvalidInput as exc:  # the one file reader's refusal: missing, a FIFO, too large
        raise TlsSettingsUnreadable(f"cannot use the REST API's TLS files ({files}): {exc}") from None
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or type(exc).__name__
        raise TlsSettingsUnreadable(f"cannot use the REST API's TLS files ({files}): {reason}") from None
    return context, security.headers()


class BoundedClient:
    """An httpx client whose every exchange is bounded (deadline, size); the reply comes back whole."""

    def __init__(self, base_url: str = "", deadline_s: float = DEADLINE_S, max_bytes: int = MAX_REPLY_BYTES,
                 transport: httpx.BaseTransport | None = None, verify: bool | ssl.SSLContext = True,
                 security: RestSecurity | None = None) -> None:
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        IN_FORCE.remember_url(base_url)  # httpx sends a URL's password as a basic authorization: never said back
        context, auth = rest_tls(security)
        self._http = httpx.Client(base_url=base_url, timeout=deadline_s, trust_env=False,
                                  transport=transport or DeadlineTransport(verify=context if security else verify),
                                  headers={"Accept-Encoding": "identity", **auth})  # nothing to inflate past the cap

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BoundedClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def request(self, method: str, url: str, *, deadline_s: float | None = None, **kwargs: Any) -> Reply:
        """The whole reply within `deadline_s` (default: the client's) and `max_bytes`; httpx's transport
        errors (DeadlinePassed among them) and ReplyRefused otherwise."""
        seconds = deadline_s or self.deadline_s
        IN_FORCE.remember_url(url)
        try:
            with deadline(seconds), self._http.stream(method, url, timeout=seconds, **kwargs) as response:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_bytes:
                    raise ReplyRefused(f"a reply of {int(declared):,} bytes (chronos reads at most "
                                       f"{self.max_bytes >> 20} MiB)")
                body = bytearray()
                if response.is_stream_consumed:  # a test transport's reply, made (and decoded by httpx) in memory
                    raw: Iterable[bytes] = (response.content,)
                    inflate = None
                else:
                    raw = response.iter_raw()
                    inflate = inflater(response.headers.get_list("content-encoding"), self.max_bytes)
                for chunk in raw:
                    body += chunk if inflate is None else inflate.feed(chunk)
                    if len(body) > self.max_bytes:
                        raise ReplyRefused(f"a reply over {self.max_bytes >> 20} MiB (chronos reads no more)")
                return Reply(response.status_code, bytes(body), dict(response.headers))
        except httpx.TimeoutException:  # every socket timeout here is at most the time left: the deadline
            raise DeadlinePassed(f"no whole reply within {seconds:g} s") from None

    def get(self, url: str, **kwargs: Any) -> Reply:
        return self.request("GET", url, **kwargs)


def get(url: str, deadline_s: float = 5.0, security: RestSecurity | None = None, **kwargs: Any) -> Reply:
    """One bounded GET with a client of its own (a readiness probe, a scrape)."""
    with BoundedClient(deadline_s=deadline_s, security=security) as client:
        return client.get(url, **kwargs)
