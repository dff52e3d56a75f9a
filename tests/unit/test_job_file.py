"""A user's job file becomes a spec chronos can (re)submit and the I/O its collector reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.jobs import job_file
from chronos.jobs.job_file import SQL_RUNNER, load_job_file
from chronos.jobs.sql_runner import render
from chronos.model import JobIO


def write(tmp_path: Path, text: str, *files: str) -> Path:
    for name in files:
        (tmp_path / name).write_text("-- placeholder\n")
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_a_sql_job_runs_through_the_sql_runner_with_its_variables(tmp_path: Path) -> None:
    path = write(tmp_path, """
name: clicks
program: {sql: q.sql, vars: {input_topic: clicks-in}}
parallelism: 3
flink-config: {pipeline.max-parallelism: "64"}
io: {bootstrap: "${bootstrap}", input-topic: "${input_topic}", output-topic: clicks-out}
""", "q.sql")
    spec, io = load_job_file(path, {"bootstrap": "127.0.0.1:9092"})
    assert spec.python_file == str(SQL_RUNNER) and spec.name == "clicks" and spec.parallelism == 3
    assert spec.args[:4] == ("--sql", str(tmp_path / "q.sql"), "--job-name", "clicks")
    assert "bootstrap=127.0.0.1:9092" in spec.args and "input_topic=clicks-in" in spec.args
    assert spec.extra_config == (("pipeline.max-parallelism", "64"),)
    assert io == JobIO("127.0.0.1:9092", "clicks-in", "clicks-out", "max_created_ms")


def test_a_jar_job_keeps_its_entry_class_and_arguments(tmp_path: Path) -> None:
    path = write(tmp_path, """
name: fraud
program: {jar: fraud.jar, entry-class: com.example.Fraud, args: [--window, "10"]}
io: {bootstrap: b:1, input-topic: tx, output-topic: alerts, timestamp-field: newest_ms}
""", "fraud.jar")
    spec, io = load_job_file(path, {})
    assert spec.kind == "jar" and spec.jar == str(tmp_path / "fraud.jar")
    assert spec.entry_class == "com.example.Fraud" and spec.args == ("--window", "10")
    assert io.timestamp_field == "newest_ms"


@pytest.mark.parametrize(("text", "needle"), [
    ("name: x\nprogram: {python: a.py, sql: b.sql}\nio: {bootstrap: b, input-topic: i, output-topic: o}",
     "exactly one of python, jar, sql"),
    ("name: x\nprogram: {jar: a.jar}\nio: {bootstrap: b, input-topic: i, output-topic: o}", "entry-class"),
    ("name: x\nprogram: {python: missing.py}\nio: {bootstrap: b, input-topic: i, output-topic: o}", "does not exist"),
    ("name: x\nprogram: {python: a.py}\nio: {bootstrap: '${nowhere}', input-topic: i, output-topic: o}",
     "${nowhere} has no value"),
    ("name: x\nprogram: {python: a.py}\n", "io"),
    ("- just\n- a list\n", "must be a mapping"),
])
def test_a_bad_job_file_is_refused_in_one_line(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.sql").write_text("")
    with pytest.raises(InvalidInput, match="job file") as caught:
        load_job_file(write(tmp_path, text), {})
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_the_shipped_second_job_loads() -> None:
    spec, io = load_job_file(Path(job_file.__file__).with_name("speeding_zones.yaml"), {"bootstrap": "k:9092"})
    assert spec.name == "chronos-speeding-zones" and io.output_topic == "zone-counts" and io.bootstrap == "k:9092"


def test_sql_variables_are_substituted_and_statements_split() -> None:
    sql = "-- a comment\nCREATE TABLE t (a INT) WITH ('topic' = '${topic}');\nINSERT INTO t SELECT 1;\n"
    assert render(sql, {"topic": "events"}) == ["CREATE TABLE t (a INT) WITH ('topic' = 'events')",
                                                "INSERT INTO t SELECT 1"]
    with pytest.raises(KeyError, match="topic"):
        render(sql, {})
