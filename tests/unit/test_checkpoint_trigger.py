"""Triggering checkpoints over REST, against replies recorded from a real Flink 2.3 cluster: a trigger's id,
its progress, its checkpoint, its failure in one line; and the probe that picks the realizer: a cluster that
has the endpoint says it knows no such trigger, one without it answers from its router (or 405), and the
choice is said with its reason; forcing pacing on a cluster without it is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from chronos.errors import InvalidInput
from chronos.flink.job_control import RestCheckpointTrigger
from chronos.flink.rest import FlinkRestClient
from chronos.tune.realizer_choice import choose_realizer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "flink_replies"
JOB = "28e5e91382e38a056775b0950b4d5e6c"
TRIGGER = "20c2ef6bc4326f73a7477430d6abb81a"


def recorded(name: str) -> object:
    return json.loads((FIXTURES / name).read_text())


def pacing_over(status_code: int, reply_file: str, method: str = "GET") -> RestCheckpointTrigger:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == f"/jobs/{JOB}/checkpoints":
            assert json.loads(request.content) == {"checkpointType": "CONFIGURED"}
            return httpx.Response(202, json=recorded("checkpoint_trigger.json"))
        if request.method == method and request.url.path.startswith(f"/jobs/{JOB}/checkpoints/"):
            return httpx.Response(status_code, json=recorded(reply_file))
        return httpx.Response(500, json={"errors": [f"unexpected {request.method} {request.url.path}"]})

    return RestCheckpointTrigger(FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler)))


def test_a_trigger_returns_its_id_and_its_status_says_in_progress_completed_or_why_it_failed() -> None:
    assert pacing_over(200, "checkpoint_trigger_in_progress.json").trigger_checkpoint(JOB) == TRIGGER
    assert pacing_over(200, "checkpoint_trigger_in_progress.json").trigger_outcome(JOB, TRIGGER).state == "in-progress"
    done = pacing_over(200, "checkpoint_trigger_completed.json").trigger_outcome(JOB, TRIGGER)
    assert (done.state, done.checkpoint_id) == ("completed", 27)
    failed = pacing_over(200, "checkpoint_trigger_failed.json").trigger_outcome(JOB, TRIGGER)
    assert failed.state == "failed" and failed.failure is not None
    assert "Not all required tasks are currently running" in failed.failure and "\n" not in failed.failure


def test_a_trigger_flink_no_longer_knows_is_a_failure_not_an_unknown_job() -> None:
    lost = pacing_over(404, "checkpoint_trigger_unknown.json").trigger_outcome(JOB, TRIGGER)
    assert lost.state == "failed"


@pytest.mark.parametrize(("status_code", "reply", "offered"), [
    (404, "checkpoint_trigger_unknown.json", True),  # Flink 2.3: its handler knows no such trigger
    (404, "no_route_get.json", False),  # no such route: the static file handler answers
    (404, "no_route_method.json", False),  # the router's own "Not found"
    (405, "no_route_method.json", False),  # a proxy in front
])
def test_the_probe_tells_a_cluster_with_the_trigger_endpoint_from_one_without(
        status_code: int, reply: str, offered: bool) -> None:
    assert pacing_over(status_code, reply).offers_checkpoint_trigger(JOB) is offered


def test_the_realizer_is_paced_where_offered_restart_otherwise_and_forcing_is_honoured_or_refused() -> None:
    assert choose_realizer("auto", lambda: True).paced
    without = choose_realizer("auto", lambda: False)
    assert not without.paced and "no checkpoint trigger endpoint" in without.why

    def never_asked() -> bool:
        raise AssertionError("a forced restart needs no probe")

    assert not choose_realizer("restart", never_asked).paced
    with pytest.raises(InvalidInput, match="--realize paced: this Flink cluster has no checkpoint trigger endpoint"):
        choose_realizer("paced", lambda: False)
