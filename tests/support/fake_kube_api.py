"""A Kubernetes API server's FlinkDeployment endpoints on 127.0.0.1, for the real kubernetes client: GET an object,
PATCH it with a JSON merge patch (RFC 7386, what the client sends for a dict body), 404 for any other name. No
cluster is reachable from these machines; this lets the real client's paths, verbs, content type and errors be
tested (a namespace's list too). Hand-written (http.server): nothing on PyPI serves custom resources without a cluster."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/apis/flink.apache.org/v1beta1/namespaces/"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class KubeApi:
    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects  # (namespace, name) -> FlinkDeployment
        self.content_types: list[str] = []


def _handler(api: KubeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _key(self) -> tuple[str, str] | None:
            path = self.path.split("?")[0]
            if not path.startswith(PREFIX):
                return None
            parts = path[len(PREFIX):].split("/")
            return (parts[0], parts[2]) if len(parts) == 3 and parts[1] == "flinkdeployments" else None

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self, key: tuple[str, str] | None) -> None:
            name = key[1] if key else self.path
            self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                              "message": f'flinkdeployments.flink.apache.org "{name}" not found'})

        def do_GET(self) -> None:  # http.server calls it by this name
            path = self.path.split("?")[0]
            if path.startswith(PREFIX) and path.endswith("/flinkdeployments"):  # a list: the namespace's objects
                namespace = path[len(PREFIX):].split("/")[0]
                items = [o for (ns, _), o in sorted(api.objects.items()) if ns == namespace]
                return self._reply(200, {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeploymentList",
                                         "metadata": {}, "items": items})
            key = self._key()
            if key not in api.objects:
                return self._not_found(key)
            self._reply(200, api.objects[key])

        def do_PATCH(self) -> None:
            key = self._key()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            api.content_types.append(self.headers.get("Content-Type", ""))
            if key not in api.objects:
                return self._not_found(key)
            api.objects[key] = merge_patch(api.objects[key], body)
            self._reply(200, api.objects[key])

    return Handler


@contextmanager
def serving(objects: dict[tuple[str, str], dict[str, Any]]) -> Iterator[tuple[str, KubeApi]]:
    """The API server on a free port: (its URL, its state); stopped on exit."""
    api = KubeApi(objects)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # shutdown() waits one poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
