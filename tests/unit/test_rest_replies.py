"""The REST client against replies recorded from a real Flink 2.3 cluster (tests/fixtures).

These pin the parsing and the error mapping; the behaviour against a live cluster is covered by the
integration tests.
"""

import json
from pathlib import Path

import httpx
import pytest

from chronos.errors import FlinkRequestFailed, FlinkUnreachable, UnknownJob
from chronos.flink.rest import FlinkRestClient

FIXTURES = Path(__file__).parent.parent / "fixtures" / "flink_replies"
JOB = json.loads((FIXTURES / "jobs_overview.json").read_text())["jobs"][0]["jid"]


def _client(routes: dict[str, object], status: int = 200) -> FlinkRestClient:
    def handler(request: httpx.Request) -> httpx.Response:
        body = routes.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"errors": ["Not found: /" + request.url.path]})
        return httpx.Response(status, json=body)

    return FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler), sleep=lambda s: None)


def _fixture(name: str) -> object:
    return json.loads((FIXTURES / name).read_text())


def test_parses_overview_and_jobs() -> None:
    client = _client({"/overview": _fixture("overview.json"), "/jobs/overview": _fixture("jobs_overview.json")})
    overview = client.overview()
    assert overview.slots_total == 4 and overview.flink_version.startswith("2.3")
    assert [j.state for j in client.jobs()] == ["RUNNING"]


def test_parses_job_detail_with_source_vertex() -> None:
    detail = _client({f"/jobs/{JOB}": _fixture("job_detail.json")}).job(JOB)
    assert detail.vertices[0].is_source
    assert detail.state == "RUNNING"


def test_parses_checkpoint_statistics_and_config() -> None:
    client = _client({f"/jobs/{JOB}/checkpoints": _fixture("checkpoints.json"),
                      f"/jobs/{JOB}/checkpoints/config": _fixture("checkpoints_config.json")})
    stats = client.checkpoints(JOB)
    assert stats.counts.completed >= 1
    latest = stats.latest.completed
    assert latest is not None and latest.external_path and latest.end_to_end_duration >= 0
    assert client.checkpoint_config(JOB).interval == 5000


def test_parses_exceptions_and_taskmanagers() -> None:
    client = _client({f"/jobs/{JOB}/exceptions": _fixture("exceptions.json"),
                      "/taskmanagers": _fixture("taskmanagers.json")})
    assert client.exceptions(JOB).exception_history.entries == ()
    assert client.taskmanagers()[0].slots_number == 4


def test_each_subtasks_state_moments_are_flinks_own() -> None:
    vertex = "e3dfc0d7e9ecd8a43f85f0b68ebf3b80"
    times = _client({f"/jobs/{JOB}/vertices/{vertex}/subtasktimes": _fixture("subtasktimes.json")}).subtask_times(
        JOB, vertex)
    assert [t.subtask for t in times] == [0, 1]
    moments = times[0].timestamps
    assert moments["CREATED"] < moments["SCHEDULED"] < moments["DEPLOYING"] < moments["INITIALIZING"] < moments["RUNNING"]
    assert moments["FAILED"] == 0  # a state never entered is dated 0


def test_sums_per_subtask_source_rates() -> None:
    detail = _fixture("job_detail.json")
    detail["vertices"][0]["id"]  # type: ignore[index]
    ids = [{"id": "0.Source__KafkaSource-x.numRecordsOutPerSecond"}, {"id": "1.Source__KafkaSource-x.numRecordsOutPerSecond"},
           {"id": "0.numRecordsOutPerSecond"}]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/jobs/{JOB}":
            return httpx.Response(200, json=detail)
        if "get" in request.url.params:
            names = request.url.params["get"].split(",")
            return httpx.Response(200, json=[{"id": n, "value": "150.5"} for n in names])
        return httpx.Response(200, json=ids)

    client = FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler))
    assert client.source_throughput(JOB) == pytest.approx(301.0)


def test_unknown_and_malformed_job_ids_are_unknown_jobs() -> None:
    client = _client({})
    with pytest.raises(UnknownJob, match="no such job"):
        client.job("0" * 32)
    with pytest.raises(UnknownJob, match="not a Flink job id"):
        client.job("not-a-job")


def test_refusals_become_one_line() -> None:
    client = _client({"/overview": {"errors": ["java.lang.IllegalStateException: boom\n\tat x.y(Z.java:1)"]}}, status=500)
    with pytest.raises(FlinkRequestFailed) as info:
        client.overview()
    assert "\n" not in str(info.value) and "boom" in str(info.value)


def test_unreachable_cluster() -> None:
    with pytest.raises(FlinkUnreachable, match="cannot reach"):
        FlinkRestClient("http://127.0.0.1:1", timeout_s=2).overview()


TRIGGER = "5f0c6e2f7a1b4d3c9e8f7a6b5c4d3e2f"  # Flink's trigger ids are 32 hex digits, like job ids


def test_stop_with_savepoint_polls_until_the_path_is_known() -> None:
    polls = iter([{"status": {"id": "IN_PROGRESS"}},
                  {"status": {"id": "COMPLETED"}, "operation": {"location": "file:/sp/savepoint-1"}}])

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            assert json.loads(request.content) == {"targetDirectory": "/sp", "drain": False}
            return httpx.Response(202, json={"request-id": TRIGGER})
        return httpx.Response(200, json=next(polls))

    client = FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler), sleep=lambda s: None)
    assert client.stop_with_savepoint(JOB, "/sp") == "file:/sp/savepoint-1"


def test_failed_savepoint_is_reported() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json={"request-id": TRIGGER})
        return httpx.Response(200, json={"status": {"id": "COMPLETED"},
                                         "operation": {"failure-cause": {"class": "CheckpointException"}}})

    client = FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler), sleep=lambda s: None)
    with pytest.raises(FlinkRequestFailed, match="CheckpointException"):
        client.stop_with_savepoint(JOB, "/sp")


def test_vertex_load_takes_the_busiest_subtask_and_skips_nan() -> None:
    detail = _fixture("job_detail.json")
    source = detail["vertices"][0]["id"]  # type: ignore[index]
    values = {"0.busyTimeMsPerSecond": "NaN", "0.backPressuredTimeMsPerSecond": "12.0"}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/jobs/{JOB}":
            return httpx.Response(200, json=detail)
        names = request.url.params["get"].split(",")
        if source in request.url.path:
            return httpx.Response(200, json=[{"id": n, "value": values[n]} for n in names])
        return httpx.Response(200, json=[{"id": n, "value": "750.0"} for n in names])

    client = FlinkRestClient("http://flink.test", transport=httpx.MockTransport(handler))
    loads = client.vertex_load(JOB)
    assert len(loads) == len(detail["vertices"])  # type: ignore[arg-type]
    assert (loads[0].max_busy_ms_per_s, loads[0].max_backpressured_ms_per_s) == (None, 12.0)
    assert (loads[1].max_busy_ms_per_s, loads[1].max_backpressured_ms_per_s) == (750.0, 750.0)


def _answering(reply: object, status: int = 200) -> FlinkRestClient:
    return FlinkRestClient("http://flink.test", transport=httpx.MockTransport(lambda r: httpx.Response(status, json=reply)),
                           sleep=lambda s: None)


@pytest.mark.parametrize("job_id", ["../../escaped", "", "ABCDEF" * 6, None, 7])
def test_a_submission_reply_without_a_real_job_id_is_refused(job_id: object) -> None:
    with pytest.raises(FlinkRequestFailed, match="carries no job id"):
        _answering({"jobid": job_id}).run_jar("jar-1", "Main", [])


def test_a_stop_reply_without_a_real_trigger_id_is_refused() -> None:
    with pytest.raises(FlinkRequestFailed, match="no trigger id"):
        _answering({"request-id": "../../jars"}, 202).stop_with_savepoint(JOB, "/sp")


def test_a_job_list_naming_a_path_is_refused_in_one_line() -> None:
    reply = {"jobs": [{"jid": "../../escaped", "name": "x", "state": "RUNNING", "start-time": 1, "end-time": -1,
                       "duration": 1}]}
    with pytest.raises(FlinkRequestFailed, match=r"jobs\.0\.jid"):
        _answering(reply).jobs()


def test_a_reply_missing_fields_is_one_line_naming_the_field() -> None:
    with pytest.raises(FlinkRequestFailed, match="GET /overview is not what chronos reads: flink-version: Field required"):
        _answering({"taskmanagers": 1}).overview()


def test_credentials_in_the_rest_url_never_appear_in_a_message() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    client = FlinkRestClient("http://alice:s3cret@flink.test", transport=httpx.MockTransport(refuse))
    with pytest.raises(FlinkUnreachable) as failed:
        client.overview()
    assert "s3cret" not in str(failed.value) and "http://***@flink.test" in str(failed.value)


class _FlakyFlink:
    """Answers GET /jobs/<id>/checkpoints with Flink's "Internal server error." `failures` times, then the reply."""

    def __init__(self, failures: int) -> None:
        self.failures, self.asked, self.now = failures, 0, 0.0

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.asked += 1
        if self.asked <= self.failures:
            return httpx.Response(500, json={"errors": [
                "Internal server error.",
                "<Exception on server side:\njava.util.concurrent.CompletionException: "
                "java.lang.IllegalStateException: not yet\n\tat a.b(C.java:1)\n\nEnd of exception on server side>"]})
        return httpx.Response(200, json=_fixture("checkpoints.json"))

    def client(self, patient: bool) -> FlinkRestClient:
        def sleep(s: float) -> None:
            self.now += s
        transport = httpx.MockTransport(self.handler)
        if patient:
            return FlinkRestClient.patient("http://flink.test", transport=transport, sleep=sleep, clock=lambda: self.now)
        return FlinkRestClient("http://flink.test", transport=transport, sleep=sleep, clock=lambda: self.now)


def test_a_long_running_part_asks_a_read_again_that_flink_answered_with_a_server_error() -> None:
    flaky = _FlakyFlink(failures=3)
    assert flaky.client(patient=True).checkpoints(JOB).counts.completed >= 0
    assert flaky.asked == 4 and flaky.now == 3.0


def test_a_lasting_server_error_ends_a_long_running_read_within_its_patience_naming_flinks_cause() -> None:
    flaky = _FlakyFlink(failures=1000)
    with pytest.raises(FlinkRequestFailed) as info:
        flaky.client(patient=True).checkpoints(JOB)
    assert flaky.now <= 6.0 and flaky.asked == 7
    assert str(info.value).endswith("Internal server error. (java.util.concurrent.CompletionException: "
                                    "java.lang.IllegalStateException: not yet)")


def test_a_command_a_user_waits_on_says_a_server_error_at_once() -> None:
    flaky = _FlakyFlink(failures=1)
    with pytest.raises(FlinkRequestFailed, match="Internal server error"):
        flaky.client(patient=False).checkpoints(JOB)
    assert flaky.asked == 1 and flaky.now == 0.0
