"""Every HTTP exchange is bounded as a whole: a reply that trickles (headers or body) ends at the deadline, a
reply too large is dropped at the cap without being read whole, and JSON is parsed only to a fixed depth.
Against a raw-socket server of the test's own (tests/support/hostile_flink.py), not a mocked transport: the
deadline lives in the socket reads."""

from __future__ import annotations

import time

import httpx
import pytest

from chronos.bounded_http import BoundedClient, DeadlinePassed, Reply, ReplyRefused
from chronos.errors import FlinkRequestFailed, FlinkUnreachable
from chronos.flink.rest import FlinkRestClient
from tests.support.hostile_flink import JOB, endless, hostile_flink, json_reply, raw_reply, recorded_routes, silence, trickle


@pytest.mark.parametrize("send", [trickle(0.2), trickle(0.2, headers_too=True), silence()],
                         ids=["body trickles", "headers trickle", "nothing comes"])
def test_an_exchange_ends_at_its_deadline_however_the_reply_dawdles(send: object) -> None:
    with hostile_flink({"/slow": send}) as server, BoundedClient(server.url, deadline_s=1.0) as client:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed, match="no whole reply within 1 s"):
            client.get("/slow")
        assert time.monotonic() - started < 1.6


def test_a_reply_declared_larger_than_the_cap_is_refused_before_it_is_read() -> None:
    with hostile_flink({"/big": endless(chunked=False, declared=100_000_000)}) as server, \
            BoundedClient(server.url, max_bytes=1 << 20) as client:
        started = time.monotonic()
        with pytest.raises(ReplyRefused, match="100,000,000 bytes"):
            client.get("/big")
        assert time.monotonic() - started < 1.0


def test_an_endless_reply_is_dropped_at_the_cap() -> None:
    with hostile_flink({"/endless": endless(chunked=True)}) as server, \
            BoundedClient(server.url, max_bytes=1 << 20) as client, pytest.raises(ReplyRefused, match="over 1 MiB"):
        client.get("/endless")


def test_json_is_read_to_a_fixed_depth_and_strictly() -> None:
    assert Reply(200, b"[" * 32 + b"]" * 32).json("a reply") is not None
    with pytest.raises(ReplyRefused, match="nests deeper than 32"):
        Reply(200, b"[" * 33 + b"]" * 33).json("a reply")
    with pytest.raises(ReplyRefused, match="nests deeper"):
        Reply(200, b"[" * 100_000 + b"]" * 100_000).json("a reply")
    with pytest.raises(ReplyRefused, match="not valid JSON"):
        Reply(200, b'{"a": NaN}').json("a reply")


def test_the_deadline_passes_through_to_flink_s_client_as_a_blip_it_can_wait_out() -> None:
    with hostile_flink({"/overview": silence()}) as server, FlinkRestClient(server.url, timeout_s=0.5) as flink, \
            pytest.raises(FlinkUnreachable, match="did not answer GET /overview whole"):
        flink.overview()


@pytest.mark.parametrize(("job", "field"), [({"duration": int("9" * 400)}, "jobs.0.duration"),
                                            ({"duration": 2**53 + 1}, "jobs.0.duration"),
                                            ({"duration": -5}, "jobs.0.duration"),
                                            ({"jid": JOB + "\n"}, "jobs.0.jid"),
                                            ({"start-time": 1.5e300}, "jobs.0.start-time")])
def test_numbers_and_ids_no_flink_sends_are_refused_naming_the_field(job: dict[str, object], field: str) -> None:
    listed = recorded_routes()["/jobs/overview"]["jobs"][0]
    with hostile_flink({"/jobs/overview": json_reply({"jobs": [{**listed, **job}]})}) as server, \
            FlinkRestClient(server.url) as flink, pytest.raises(FlinkRequestFailed, match=field):
        flink.jobs()


def test_flink_s_unknown_value_passes_and_is_kept() -> None:
    listed = recorded_routes()["/jobs/overview"]["jobs"][0]
    with hostile_flink({"/jobs/overview": json_reply({"jobs": [{**listed, "end-time": -1, "duration": -1}]})}) as server, \
            FlinkRestClient(server.url) as flink:
        assert flink.jobs()[0].duration == -1


def test_a_submission_answered_with_a_job_id_and_a_newline_is_refused() -> None:
    def flink(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"jobid": JOB + "\n"})

    with FlinkRestClient("http://f", transport=httpx.MockTransport(flink)) as client, \
            pytest.raises(FlinkRequestFailed, match="carries no job id"):
        client.run_jar("1_x.jar", "Main", [])


def test_a_reply_that_is_not_json_is_one_line() -> None:
    with hostile_flink({"/overview": raw_reply(b"<html>", content_type="text/html")}) as server, \
            FlinkRestClient(server.url) as flink, pytest.raises(FlinkRequestFailed, match="not valid JSON"):
        flink.overview()
