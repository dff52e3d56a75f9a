"""What comes back from a server is gated before anything reads it: a compressed body is inflated no further than the
cap and in one coding at most, an overflowed number is no number, a secret chronos sent is never said back (however
the server quotes it), and text prints as what it is (controls, bidi overrides and lone surrogates spelled out)."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import httpx
import pytest

from chronos.bounded_http import BoundedClient, ReplyRefused, inflater
from chronos.cli.common import json_text
from chronos.errors import IN_FORCE, ChronosError, InvalidInput, said
from chronos.input_files import load_json
from chronos.terminal_text import one_line, shown

CAP = 1 << 20


def test_one_gzip_or_deflate_coding_is_undone_and_identity_is_none() -> None:
    body = json.dumps({"jobs": []}).encode()
    for coding, data in (("gzip", gzip.compress(body)), ("x-gzip", gzip.compress(body)), ("deflate", zlib.compress(body)),
                         ("GZIP", gzip.compress(body))):
        undo = inflater([coding], CAP)
        assert undo is not None and undo.feed(data) == body, coding
    assert inflater([], CAP) is None and inflater(["identity"], CAP) is None
    undo = inflater(["gzip"], CAP)
    assert undo is not None and undo.feed(gzip.compress(b"[1,") + gzip.compress(b"2]")) == b"[1,2]", "members in a row"


def test_a_bomb_is_inflated_no_further_than_the_cap() -> None:
    bomb = gzip.compress(b"[" * (1 << 20), 9) * 256  # 256 MiB in ~250 KB: a gzip member per MiB, in a row
    undo = inflater(["gzip"], CAP)
    assert undo is not None
    produced = sum(len(undo.feed(bomb[i:i + 65536])) for i in range(0, len(bomb), 65536))
    assert produced == CAP + 1, "one byte past the cap: enough to refuse, never more"


def test_stacked_unknown_or_false_codings_are_one_line() -> None:
    for codings, says in ((["gzip, gzip"], "2 content codings"), (["gzip", "deflate"], "2 content codings"),
                          (["zstd"], "content coding 'zstd'"), (["br"], "content coding 'br'")):
        with pytest.raises(ReplyRefused, match=says):
            inflater(codings, CAP)
    undo = inflater(["gzip"], CAP)
    assert undo is not None
    with pytest.raises(ReplyRefused, match="says it is gzip-encoded, and is not"):
        undo.feed(b'{"jobs": []}')


def test_the_client_refuses_a_compressed_reply_past_its_cap() -> None:
    bomb = gzip.compress(b" " * (4 << 20))

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(bomb), headers={"Content-Encoding": "gzip"})

    with BoundedClient("http://flink.test", max_bytes=CAP, transport=httpx.MockTransport(server)) as client, \
            pytest.raises(ReplyRefused, match="over 1 MiB"):
        client.get("/jobs")


def test_an_overflowed_number_is_not_json_chronos_reads() -> None:
    with pytest.raises(InvalidInput, match="the number 1e400 is out of range"):
        load_json('{"wall_time_s": 1e400}', "a snapshot")
    with pytest.raises(InvalidInput, match="NaN is not a number JSON allows"):
        load_json('{"x": NaN}', "a reply")
    assert load_json('{"x": 1.5e300}', "a reply") == {"x": 1.5e300}


def test_a_secret_read_is_never_said_back_in_any_form_a_server_could_quote_it() -> None:
    IN_FORCE.remember("tok-3f9a\"quoted")
    IN_FORCE.remember_url("http://admin:p%40ss-7c1e@flink.example:8081/")
    basic = base64.b64encode(b"admin:p@ss-7c1e").decode()
    for quoted in ("Bearer tok-3f9a\"quoted", json.dumps({"echo": "tok-3f9a\"quoted"}), "password p@ss-7c1e",
                   "raw p%40ss-7c1e", f"Authorization: Basic {basic}"):
        for text in (str(ChronosError(f"Flink refused GET /jobs: {quoted}")), shown(quoted), one_line(quoted),
                     said(quoted), json_text({"error": quoted})):
            assert "tok-3f9a" not in text and "p@ss-7c1e" not in text and "p%40ss-7c1e" not in text, text
            assert basic not in text, text


def test_json_output_is_strict_and_a_non_finite_number_is_null() -> None:
    text = json_text({"rate": float("nan"), "p99": float("inf"), "ok": [1.5, {"x": float("-inf")}]})
    assert json.loads(text) == {"rate": None, "p99": None, "ok": [1.5, {"x": None}]}


def test_text_prints_as_what_it_is() -> None:
    assert shown("cost \u202e0001$") == "cost \\u202e0001$", "a bidi override would print the rest reversed"
    assert shown("half \ud800 pair") == "half \\ud800 pair", "a lone surrogate cannot be written at all"
    assert shown("a\x1b[2Jb\x9b") == "a\\x1b[2Jb\\x9b"
    assert shown("\u2066isolate\u2069 \u200fmark") == "\\u2066isolate\\u2069 \\u200fmark"
    shown("plain ünïcode").encode("utf-8")  # letters are letters
    assert shown("plain ünïcode") == "plain ünïcode"
