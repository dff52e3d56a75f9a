"""Input crafted to hurt the host, or merely careless: each is refused in one line, fast, and nothing is
written where it should not be. (Issue: "the local stack and the CLI can be turned against the host".)"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from chronos.errors import InvalidInput
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import RestSubmitter, content_named
from chronos.jobs.job_file import load_job_file
from chronos.model import CheckpointSettings, JobSpec
from chronos.stack.job_records import JobRecordStore
from chronos.stack.state import StackState
from tests.support.cli import assert_one_line_error, chronos

JOB = "0123456789abcdef0123456789abcdef"


def yaml_bomb(levels: int = 9) -> str:
    """Nested anchors: each level refers to the one below ten times (10^levels leaves), a few hundred bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, levels):
        refs = ", ".join([f"*a{n - 1}"] * 10)
        lines.append(f"a{n}: &a{n} [{refs}]")
    return "\n".join(lines) + "\n"


def test_a_yaml_bomb_job_file_is_refused_within_a_second(tmp_path: Path) -> None:
    bomb = tmp_path / "job.yaml"
    bomb.write_text("name: boom\nio: {bootstrap: 'k:1', input-topic: a, output-topic: b}\n" + yaml_bomb())
    assert len(bomb.read_bytes()) < 1500
    start = time.monotonic()
    with pytest.raises(InvalidInput, match=r"uses a YAML alias \*a0 \(line 4\)"):
        load_job_file(bomb, {"bootstrap": "k:1"})
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("command", [
    ["tune", "--config", "{file}", "--latency-p99", "1s", "--recovery", "30s", "--metrics-port", "-1"],
    ["chaos", "run", "{file}"],
])
def test_yaml_bombs_are_one_line_in_every_file_chronos_reads(tmp_path: Path, command: list[str]) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(yaml_bomb())
    start = time.monotonic()
    done = chronos(*(part.format(file=bomb) for part in command), "--stack-dir", str(tmp_path))
    assert_one_line_error(done, "YAML alias")
    assert time.monotonic() - start < 15  # a CLI start; the bomb itself is refused before it expands


@pytest.mark.parametrize(("value", "shown"), [("x'; DROP TABLE t; --", "\"'\""), ("a\nINSERT", "'\\n'"),
                                              ("a--b", "'--'"), ("a/*b", "'/*'")])
def test_sql_variables_that_could_leave_a_literal_are_refused(tmp_path: Path, value: str, shown: str) -> None:
    (tmp_path / "q.sql").write_text("INSERT INTO out SELECT * FROM t WHERE topic = '${topic}';\n")
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({"name": "q", "program": {"sql": "q.sql", "vars": {"topic": value}},
                               "io": {"bootstrap": "k:1", "input-topic": "a", "output-topic": "b"}}))
    with pytest.raises(InvalidInput, match=re.escape(f"SQL variable topic holds {shown}")):
        load_job_file(job, {"bootstrap": "k:1"})


def test_program_vars_given_as_a_list_is_one_line(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("name: q\nprogram: {sql: q.sql, vars: [a, b]}\nio: {bootstrap: 'k:1', input-topic: a, output-topic: b}\n")
    with pytest.raises(InvalidInput, match=r"program\.vars must be a mapping"):
        load_job_file(job, {})


def test_a_crafted_job_id_never_names_a_file(tmp_path: Path) -> None:
    store = JobRecordStore(tmp_path / "stack" / "jobs")
    spec = JobSpec("x", "job.py")
    from chronos.stack.job_records import JobRecord

    for crafted in ("../../escaped", "../" + JOB, JOB.upper(), ""):
        with pytest.raises(InvalidInput, match="is not a Flink job id"):
            store.save(JobRecord(crafted, spec, CheckpointSettings(1000)))
        assert store.get(crafted) is None
    assert sorted(p.name for p in tmp_path.rglob("*")) == [], "nothing written anywhere"


class _Impostor(BaseHTTPRequestHandler):
    """Something on a REST port that answers like Flink, with a job id that is a path."""

    def log_message(self, *args: object) -> None:
        return None

    def _json(self, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._json({"files": []})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._json({"filename": "/tmp/u/1_flink-python.jar"} if self.path == "/jars/upload"
                   else {"jobid": "../../escaped"})


@pytest.fixture()
def impostor() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)  # shutdown() waits one poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_rest_endpoint_answering_a_path_as_job_id_is_refused_and_nothing_escapes(
        stack: StackState, impostor: str) -> None:
    before = set(stack.stack_dir_path.parent.rglob("*.json"))
    done = chronos("job", "submit", "demo", "--rest-url", impostor, "--no-create-topics", "--no-wait",
                   "--stack-dir", stack.stack_dir)
    assert_one_line_error(done, "carries no job id", "../../escaped")
    assert set(stack.stack_dir_path.parent.rglob("*.json")) == before
    assert not (stack.stack_dir_path.parent.parent / "escaped.json").exists()


def test_credentials_in_a_rest_url_are_never_echoed() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = chronos("job", "list", "--rest-url", f"http://alice:s3cr3t@127.0.0.1:{port}")
    assert_one_line_error(done, "cannot reach the Flink REST API at http://***@127.0.0.1")
    assert "s3cr3t" not in done.stdout + done.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (["job", "submit", "--interval", "9" * 400], "invalid interval"),
    (["job", "submit", "--interval", "10000h"], "at most 400 days"),
    (["load", "run", "--rate", "nan", "--count", "1"], "not a finite number"),
    (["load", "run", "--duration", "inf"], "not a finite number"),
    (["chaos", "kill-taskmanager", "--mtbf", "1e400"], "not a finite number"),
    (["tune", "--latency-p99", "1s", "--recovery", "30s", "--metrics-port", "70000"], "out of range"),
])
def test_numbers_out_of_any_sense_are_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    assert_one_line_error(chronos(*args, "--stack-dir", str(tmp_path)), needle)


def test_a_tune_config_with_nan_or_huge_seconds_is_one_line(tmp_path: Path) -> None:
    for text, needle in (("recovery_s: .nan\n", "finite number"), ("recovery_s: 1.0e+20\n", "less than or equal")):
        config = tmp_path / "policy.yaml"
        config.write_text("latency_p99_ms: 1000\n" + text)
        done = chronos("tune", "--config", str(config), "--metrics-port", "-1", "--stack-dir", str(tmp_path))
        assert_one_line_error(done, needle)


def test_a_metrics_port_in_use_is_refused_before_the_tuner_starts(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = chronos("tune", "--latency-p99", "1s", "--recovery", "30s", "--metrics-port", str(port),
                       "--metrics-address", "127.0.0.1", "--stack-dir", str(tmp_path))
    assert_one_line_error(done, f"--metrics-port {port} on 127.0.0.1 is in use")
    assert not (tmp_path / "profiles.db").exists(), "refused before anything was set up"


def test_a_database_under_a_regular_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    done = chronos("tune", "--db", str(tmp_path / "file" / "chronos.db"), "--latency-p99", "1s", "--recovery", "30s",
                   "--metrics-port", "-1", "--stack-dir", str(tmp_path))
    assert_one_line_error(done, "cannot create the directory of")


def test_an_unexpected_failure_is_one_line_and_its_traceback_only_with_debug(tmp_path: Path) -> None:
    """A stack directory below a regular file: an OSError no command anticipates."""
    (tmp_path / "file").write_text("")
    args = ("stack", "up", "--stack-dir", str(tmp_path / "file" / "stack"))
    assert_one_line_error(chronos(*args, timeout=240), "unexpected NotADirectoryError", "--debug")
    assert "Traceback (most recent call last)" in chronos("--debug", *args, timeout=240).stderr


def test_a_rebuilt_jar_is_uploaded_again_and_a_stranger_s_jar_of_that_name_is_never_run(tmp_path: Path) -> None:
    uploads: list[str] = []
    cluster_jars = {"0_my-job.jar": "my-job.jar"}  # someone else's jar with the plain name

    def flink(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/jars" and request.method == "GET":
            return httpx.Response(200, json={"files": [{"id": i, "name": n} for i, n in cluster_jars.items()]})
        if request.url.path == "/jars/upload":
            name = request.content.split(b'filename="', 1)[1].split(b'"', 1)[0].decode()
            uploads.append(name)
            jar_id = f"{len(uploads)}_{name}"
            cluster_jars[jar_id] = name
            return httpx.Response(200, json={"filename": f"/u/{jar_id}", "status": "success"})
        return httpx.Response(200, json={"jobid": JOB})

    jar = tmp_path / "my-job.jar"
    jar.write_bytes(b"version 1")
    spec = JobSpec("j", "", jar=str(jar), entry_class="Main")
    submitter = RestSubmitter(FlinkRestClient("http://f", transport=httpx.MockTransport(flink)), tmp_path / "py.jar")
    submitter.submit(spec, CheckpointSettings(1000))
    submitter.submit(spec, CheckpointSettings(1000))
    assert uploads == [content_named(jar)] and uploads[0] != "my-job.jar", "uploaded once, under its content hash"
    time.sleep(0.01)
    jar.write_bytes(b"version 2, rebuilt")
    submitter.submit(spec, CheckpointSettings(1000))
    assert len(uploads) == 2 and uploads[1] == content_named(jar) != uploads[0], "the rebuilt jar was uploaded"
    fresh = RestSubmitter(FlinkRestClient("http://f", transport=httpx.MockTransport(flink)), tmp_path / "py.jar")
    fresh.submit(spec, CheckpointSettings(1000))
    assert len(uploads) == 2, "a new chronos reuses the cluster's copy of the same content"


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: then the services run as another user")
def test_a_program_the_service_user_cannot_read_is_one_line_before_flink_sees_it(stack: StackState,
                                                                                  tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("print('never run')\n")  # pytest's tmp dirs are 0700, root's
    job = tmp_path / "job.yaml"
    job.write_text("name: private\nprogram: {python: job.py}\nio: {bootstrap: '127.0.0.1:9', input-topic: a, "
                   "output-topic: b}\n")
    done = chronos("job", "submit", "--file", str(job), "--no-create-topics", "--no-wait", "--stack-dir", stack.stack_dir)
    assert_one_line_error(done, f"run as user {stack.service_user!r}, who cannot read", str(tmp_path / "job.py"))


def test_a_load_worker_that_dies_is_one_line_naming_why(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = chronos("load", "run", "--workers", "2", "--vehicles", "10", "--count", "10", "--bootstrap",
                   f"127.0.0.1:{port}", "--stack-dir", str(tmp_path))
    assert_one_line_error(done, "the load generator failed: worker", "cannot reach Kafka")
