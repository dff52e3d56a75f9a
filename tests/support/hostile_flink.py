"""Something on a REST port that answers like Flink, or like a hostile or broken server: each path answered as a
test says (a reply recorded from Flink 2.3 unless told otherwise), over a raw socket so that a reply can trickle,
never end, lie about its length or be any bytes at all. Started and stopped by the test (a context manager)."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPLIES = Path(__file__).parent.parent / "fixtures" / "flink_replies"
JOB = "a516c64b92a80f756b99ff94114dfb99"  # the job of the recorded replies

Send = Callable[[socket.socket], None]
_CURRENT = threading.local()  # the request a handler thread answers now


def request_head() -> str:
    """The head (request line and headers) of the request being answered, for a reply that repeats it."""
    return str(getattr(_CURRENT, "head", ""))


def _recorded(name: str) -> Any:
    return json.loads((REPLIES / name).read_text())


def recorded_routes() -> dict[str, Any]:
    """A running job as Flink 2.3 described it, by path."""
    detail = _recorded("job_detail.json")
    vertex = detail["vertices"][0]["id"]
    return {
        "/overview": _recorded("overview.json"),
        "/jobs/overview": _recorded("jobs_overview.json"),
        f"/jobs/{JOB}": detail,
        f"/jobs/{JOB}/checkpoints": _recorded("checkpoints.json"),
        f"/jobs/{JOB}/checkpoints/config": _recorded("checkpoints_config.json"),
        f"/jobs/{JOB}/exceptions": _recorded("exceptions.json"),
        f"/jobs/{JOB}/vertices/{vertex}/metrics": _recorded("vertex_metrics.json"),
        "/taskmanagers": _recorded("taskmanagers.json"),
        "/jobmanager/config": [{"key": "heartbeat.interval", "value": "10000"}],
        "/jars": {"files": []},
    }


def json_reply(body: Any, status: int = 200) -> Send:
    return raw_reply(json.dumps(body).encode(), status)


def raw_reply(data: bytes, status: int = 200, content_type: str = "application/json") -> Send:
    def send(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
    return send


def trickle(every_s: float = 2.0, headers_too: bool = False) -> Send:
    """One byte every `every_s`, for ever: of the body (headers sent at once), or of the headers themselves."""
    def send(conn: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        if not headers_too:
            conn.sendall(head)
        data = head if headers_too else b"[" * 1000
        for byte in data:
            conn.sendall(bytes([byte]))
            time.sleep(every_s)
    return send


def endless(chunked: bool, declared: int | None = None) -> Send:
    """As fast as it goes: a body of `declared` bytes (or an endless chunked one) of `[[[[...`."""
    def send(conn: socket.socket) -> None:
        block = b"[" * 65536
        if chunked:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True:
                conn.sendall(b"10000\r\n" + block + b"\r\n")
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode())
        left = declared or 0
        while left > 0:
            conn.sendall(block[:left])
            left -= len(block)
    return send


def silence() -> Send:
    """Accepts, reads the request, says nothing for ever."""
    def send(conn: socket.socket) -> None:
        while conn.recv(1024):
            pass
    return send


@dataclass
class HostileFlink:
    routes: dict[str, Send] = field(default_factory=dict)  # path (no query) -> how to answer; POST as "POST /path"
    url: str = ""
    requests: list[str] = field(default_factory=list)

    def answer(self, path: str, send: Send | Any) -> None:
        self.routes[path] = send if callable(send) else json_reply(send)

    def _reply(self, method: str, path: str) -> Send:
        for key in (f"{method} {path}", path):
            if key in self.routes:
                return self.routes[key]
        return json_reply({"errors": [f"Not found: {path}"]}, 404)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Any = self.server
        conn: socket.socket = self.request
        conn.settimeout(30)
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            method, target = head.split(" ", 2)[:2]
            path = target.split("?", 1)[0]
            length = next((int(line.split(":", 1)[1]) for line in head.split("\r\n")
                           if line.lower().startswith("content-length:")), 0)
            body = data.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                body += chunk
            server.flink.requests.append(f"{method} {path}")
            _CURRENT.head = head
            server.flink._reply(method, path)(conn)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextlib.contextmanager
def hostile_flink(answers: Mapping[str, Any] | None = None) -> Iterator[HostileFlink]:
    """A server answering the recorded replies, each path in `answers` as given there instead."""
    flink = HostileFlink()
    for path, reply in recorded_routes().items():
        flink.answer(path, reply)
    for path, reply in (answers or {}).items():
        flink.answer(path, reply)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.flink = flink  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # shutdown() waits one poll
    thread.start()
    flink.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield flink
    finally:
        server.shutdown()
        server.server_close()
