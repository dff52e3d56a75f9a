"""A Flink REST API behind a proxy that asks for an Authorization header: chronos sends the one `--rest-auth` names
(read from its reference, never said), and a refusal is one line saying what it sent. The proxy is the test's own
(a few lines of the standard library in front of the stack's real Flink); what answers behind it is Flink."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from chronos.stack.state import StackState
from tests.support.cli import assert_one_line_error, chronos

TOKEN = "pr0xy-t0ken"
BASIC = "ops:pr0xy-pw"


@pytest.fixture()
def proxy(stack: StackState) -> Iterator[str]:
    accepted = {f"Bearer {TOKEN}", "Basic " + base64.b64encode(BASIC.encode()).decode()}

    class Forward(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("Authorization") not in accepted:
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Bearer")
                self.end_headers()
                return
            reply = httpx.get(stack.rest_url + self.path, timeout=10)
            self.send_response(reply.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

        def log_message(self, *_: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_the_authorization_header_is_sent_from_its_reference(proxy: str, stack: StackState, tmp_path: Path) -> None:
    listing = ["job", "list", "--json", "--rest-url", proxy, "--stack-dir", stack.stack_dir]
    refused = chronos(*listing)
    assert_one_line_error(refused, "refused GET /jobs/overview with HTTP 401: chronos sent no Authorization header")
    token = chronos("--rest-auth", "bearer:${env:CHRONOS_TEST_TOKEN}", *listing,
                    env={**os.environ, "CHRONOS_TEST_TOKEN": TOKEN})
    assert token.returncode == 0 and isinstance(json.loads(token.stdout), list), token.stderr
    secret = tmp_path / "basic"
    secret.write_text(BASIC + "\n")
    basic = chronos("--rest-auth", f"basic:${{file:{secret}}}", *listing)
    assert basic.returncode == 0, basic.stderr
    wrong = chronos("--rest-auth", "bearer:${env:CHRONOS_TEST_TOKEN}", *listing,
                    env={**os.environ, "CHRONOS_TEST_TOKEN": "wr0ng"})
    assert_one_line_error(wrong, "HTTP 401: chronos sent the bearer authorization from ${env:CHRONOS_TEST_TOKEN}")
    assert "wr0ng" not in wrong.stderr and TOKEN not in token.stderr + token.stdout
