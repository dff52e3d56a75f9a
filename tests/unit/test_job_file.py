"""A user's job file becomes a spec chronos can (re)submit and the I/O its collector reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.jobs import job_file
from chronos.jobs.job_file import SQL_RUNNER, load_job_file
from chronos.jobs.shipped import program, shipped
from chronos.model import JobIO

render = program("sql_runner").render


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
    ("name: x\nprogram: {python: missing.py}\nio: {bootstrap: 'k:1', input-topic: i, output-topic: o}", "does not exist"),
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
    spec, io = load_job_file(shipped("speeding_zones.yaml"), {"bootstrap": "k:9092"})
    assert spec.name == "chronos-speeding-zones" and io.output_topic == "zone-counts" and io.bootstrap == "k:9092"


def test_sql_variables_are_substituted_and_statements_split() -> None:
    sql = "-- a comment\nCREATE TABLE t (a INT) WITH ('topic' = '${topic}');\nINSERT INTO t SELECT 1;\n"
    assert render(sql, {"topic": "events"}) == ["CREATE TABLE t (a INT) WITH ('topic' = 'events')",
                                                "INSERT INTO t SELECT 1"]
    with pytest.raises(KeyError, match="topic"):
        render(sql, {})


# -- what a job file may not do ------------------------------------------------------------------------------------
IO = "io: {bootstrap: 'k:1', input-topic: a, output-topic: b}\n"


@pytest.mark.parametrize(("program", "needle"), [
    ("{python: ../../../../etc/passwd}", "lies outside the job file's folder"),
    ("{sql: ../../../etc/shadow}", "lies outside the job file's folder"),
    ("{python: sub/../../job.py}", "lies outside the job file's folder"),
    ("{python: link.py}", "lies outside the job file's folder"),  # a link inside, pointing out
])
def test_a_program_outside_the_job_file_s_folder_is_refused_unless_given_absolute(tmp_path: Path, program: str,
                                                                                   needle: str) -> None:
    folder = tmp_path / "jobs"
    folder.mkdir()
    (tmp_path / "job.py").write_text("print('outside')\n")
    (folder / "link.py").symlink_to(tmp_path / "job.py")
    with pytest.raises(InvalidInput, match=needle):
        load_job_file(write(folder, f"name: x\nprogram: {program}\n{IO}"), {})
    spec, _ = load_job_file(write(folder, f"name: x\nprogram: {{python: {tmp_path / 'job.py'}}}\n{IO}"), {})
    assert spec.python_file == str(tmp_path / "job.py"), "an absolute path says it is meant"


@pytest.mark.parametrize(("text", "needle"), [
    ('name: "a\\nb"\n' + IO, "name"),
    ('name: "a\\e]0;x\\ab"\n' + IO, "name"),
    ("name: " + "n" * 201 + "\n" + IO, "name"),
    ("name: x\nio: {bootstrap: 'k:1', input-topic: '../x', output-topic: b}\n", "invalid topic '../x'"),
    ("name: x\nio: {bootstrap: 'k:1', input-topic: [a, 'a/b\\c'], output-topic: b}\n", "invalid topic"),
    ("name: x\nio: {bootstrap: 'k:1', input-topic: a, output-topic: '..'}\n", "invalid topic '..'"),
    ("name: x\nio: {bootstrap: \"k:1\\nx\", input-topic: a, output-topic: b}\n", "invalid Kafka bootstrap"),
    ("name: x\nio: {bootstrap: 'k:1', input-topic: a, output-topic: b, latency-source: promql, latency-query: up, "
     "prometheus-url: 'http://a:b@c@d'}\n", "not a URL chronos takes"),
])
def test_names_topics_and_addresses_are_checked_where_the_file_is_read(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        load_job_file(write(tmp_path, text), {}, program_required=False)


def test_sql_variables_are_told_apart_by_where_they_stand() -> None:
    sql = """-- ${in_line_comment}
    /* ${in_block_comment} */ SELECT '${in_literal}', 'it''s ${after_doubled_quote}', `${in_identifier}`
    FROM ${bare_table} WHERE n > ${bare_number} AND s = "${in_double_quotes}"
    """
    assert job_file.bare_variables(sql) == {"in_block_comment", "bare_table", "bare_number"}


@pytest.mark.parametrize(("value", "refused"), [("x) UNION SELECT 1 FROM y WHERE (1", True), ("a b", True),
                                                ("events_2", False), ("42", False), ("db.table", False)])
def test_a_variable_outside_quotes_may_only_be_a_name_or_a_number(tmp_path: Path, value: str, refused: bool) -> None:
    (tmp_path / "q.sql").write_text("INSERT INTO out SELECT * FROM ${table} WHERE topic = '${topic}';\n")
    path = write(tmp_path, "name: q\nprogram: {sql: q.sql, vars: {table: 'VALUE', topic: 'a b c'}}\n" + IO)
    path.write_text(path.read_text().replace("VALUE", value))
    if refused:
        with pytest.raises(InvalidInput, match=r"SQL variable table stands outside quotes in q\.sql"):
            load_job_file(path, {})
    else:
        load_job_file(path, {})  # and a space is fine inside the literal


@pytest.mark.parametrize("name", ["x=1", "x) OR (1", "x\ny", "1x", "a-b", "", "x" * 65])
def test_a_sql_variable_is_named_as_an_identifier(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, f"""
name: clicks
program: {{sql: q.sql, vars: {{{json.dumps(name)}: a, x: b}}}}
io: {{bootstrap: "k:1", input-topic: a, output-topic: b}}
""", "q.sql")
    with pytest.raises(InvalidInput, match=r"SQL variable name .* is not an identifier"):
        load_job_file(path, {})


def test_the_sql_runner_refuses_a_variable_name_that_is_not_one() -> None:
    parse_var = program("sql_runner").parse_var
    assert parse_var("topic=a=b") == ("topic", "a=b"), "the value may hold '='; the name may not"
    for given in ("x)=1", "=1", "x", "1x=2", "a b=c"):
        with pytest.raises(ValueError, match="a variable's name is an identifier"):
            parse_var(given)


def test_a_program_path_with_a_control_character_and_a_parallelism_flink_refuses_are_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'name: j\nprogram: {python: "job\\0.py"}\nio: {bootstrap: "k:1", input-topic: a, '
                           'output-topic: b}\n')
    with pytest.raises(InvalidInput, match="holds a control character"):
        load_job_file(path, {})
    path = write(tmp_path, "name: j\nprogram: {python: job.py}\nparallelism: 32769\nio: {bootstrap: 'k:1', "
                           "input-topic: a, output-topic: b}\n", "job.py")
    with pytest.raises(InvalidInput, match="parallelism: Input should be less than or equal to 32768"):
        load_job_file(path, {})
