"""How a user describes their own job to chronos: a YAML job file.

    name: my-pipeline                    # the Flink pipeline name
    program:                             # exactly one of python / jar / sql
      sql: my_query.sql                  # paths are relative to this file
      vars: {input_topic: events}        # sql: values for ${name} in the file
      # python: my_job.py   args: [--flag, value]
      # jar: my-job.jar     entry-class: com.example.Job   args: [...]
    parallelism: 2
    flink-config: {pipeline.max-parallelism: "128"}
    copy:                                # how chronos makes a profiling copy: which program.vars carry
      input-topics: [input_topic]        # its input topic(s), output topic(s), consumer group,
      output-topics: [output_topic]      # transactional-id prefix and job name; a copy gets its own
      group-id: group_id                 # values for them (python / jar args use them as ${name})
      transactional-id-prefix: txn_prefix
      event-time-fields: [$.ts]          # JSON paths of the input's event times: a replay of the
                                         # recorded input moves them (and the record timestamp) to now
    io:                                  # how chronos measures the job from outside
      bootstrap: ${bootstrap}            # ${bootstrap}: the stack's broker unless given
      input-topic: events                # arrival rate from its end offsets (a list: several topics)
      output-topic: results              # end-to-end latency from its committed records ...
      timestamp-field: max_created_ms    # ... each carrying the newest input's creation time (epoch ms)
      latency-source: output             # or flink-latency (Flink's latency markers, needs
                                         # metrics.latency.interval), or promql (+ latency-query,
                                         # prometheus-url: a query whose first sample is p99 in seconds)
      kafka:                             # a secured broker: how chronos's clients log in (default: the
        security-protocol: SASL_SSL      # stack's own, or `chronos --kafka-security FILE`)
        sasl-mechanism: SCRAM-SHA-512    # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
        username: analytics
        password: ${file:/run/secrets/kafka-password}   # by reference only: ${env:NAME} or ${file:/path}
        ca-file: ca.pem                  # PEM; cert-file + key-file (+ key-password) for mutual TLS

`${name}` anywhere in the file takes a value from the defaults handed in (the stack's `bootstrap`)
or from `program.vars`; `${env:NAME}` and `${file:/path}` are secrets' references, left as they are (chronos reads them
only where it builds a client; a SQL job's program resolves the ones in its variables where it runs). The result is
a JobSpec chronos can submit and resubmit, and the JobIO its
collector reads.

What a job file may not do: name a program outside its own folder by a relative path (`../../etc/passwd`:
an absolute path says that is meant), name a topic Kafka would refuse, give the job a name with control
characters, or give a SQL variable a value that changes the statement: in a quoted literal no quote,
`;`, comment or newline; outside quotes (an identifier, a number) only letters, digits, `_ . : -`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import InvalidInput, field_error
from chronos.input_files import read_mapping, read_text
from chronos.jobs.shipped import shipped
from chronos.model import JobIO, JobSpec, check_bootstrap, check_kafka_name, check_url
from chronos.profiler.event_time import EventTimeFields

SQL_RUNNER = shipped("flink-programs/sql_runner.py")
JOB_NAME_VAR = "chronos_job_name"  # a SQL job's pipeline name, as a variable its copies get their own value for
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# What a value pasted into Flink SQL may not hold: a quote ends a string literal, `;` or a newline starts
# another statement, `--` and `/*` comment out the rest. Refused rather than escaped: a value may sit
# outside a literal too (an identifier, a number), where no escaping helps.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SQL_UNSAFE = re.compile(r"['\"`;\\\r\n\x00]|--|/\*")
# What a value used outside any quotes may be: a name or a number, nothing that could be SQL of its own.
_SQL_BARE_SAFE = re.compile(r"[A-Za-z0-9_.:-]*")


def check_sql_value(name: str, value: str, where: Path) -> None:
    found = _SQL_UNSAFE.search(value)
    if found:
        raise InvalidInput(f"job file {where}: SQL variable {name} holds {found.group()!r}, which chronos does not paste "
                           "into SQL (no quotes, ;, newlines, backslashes or comments)")


def bare_variables(sql: str) -> set[str]:
    """The `${name}`s `sql` uses outside a quoted literal or quoted identifier (a block comment counts as
    outside: a value could end it). Hand-written: no SQL parser on the registries reads Flink's dialect."""
    bare: set[str] = set()
    state: str | None = None  # None, "line" / "block" comment, or the quote character we are inside
    i = 0
    while i < len(sql):
        if state is None and sql.startswith(("--", "/*"), i):
            state, i = ("line" if sql[i] == "-" else "block"), i + 2
            continue
        if state is None and sql[i] in "'\"`":
            state, i = sql[i], i + 1
            continue
        if (state == "line" and sql[i] == "\n") or (state == "block" and sql.startswith("*/", i)):
            state, i = None, i + (1 if sql[i] == "\n" else 2)
            continue
        if state is not None and state in "'\"`" and sql[i] == state:
            doubled = sql.startswith(state * 2, i)  # '' inside a literal is a quote, not its end
            state, i = (state, i + 2) if doubled else (None, i + 1)
            continue
        found = _VARIABLE.match(sql, i)
        if found:
            if state in (None, "block"):
                bare.add(found.group(1))
            i = found.end()
            continue
        i += 1
    return bare


def check_sql_placements(sql: str, variables: dict[str, str], sql_path: Path, where: Path) -> None:
    for name in sorted(bare_variables(sql)):
        value = variables.get(name)
        if value is not None and not _SQL_BARE_SAFE.fullmatch(value):
            raise InvalidInput(f"job file {where}: SQL variable {name} stands outside quotes in {sql_path.name}, where "
                               f"it may only be a name or a number (letters, digits, _ . : -), not {value[:40]!r}")


class _Program(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    python: str | None = None
    jar: str | None = None
    entry_class: str | None = Field(None, alias="entry-class")
    sql: str | None = None
    args: list[str] = Field(default_factory=list)
    vars: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_kind(self) -> _Program:
        kinds = [k for k in ("python", "jar", "sql") if getattr(self, k)]
        if len(kinds) != 1:
            raise ValueError("give exactly one of python, jar, sql")
        if self.jar and not self.entry_class:
            raise ValueError("a jar needs entry-class")
        return self


class _IO(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    bootstrap: str
    input_topic: str | list[str] = Field(alias="input-topic")
    output_topic: str = Field(alias="output-topic")
    timestamp_field: str = Field("max_created_ms", alias="timestamp-field")
    latency_source: Literal["output", "flink-latency", "promql"] = Field("output", alias="latency-source")
    latency_query: str = Field("", alias="latency-query")
    prometheus_url: str = Field("", alias="prometheus-url")
    kafka: KafkaSecurity | None = None

    @model_validator(mode="after")
    def _promql_complete(self) -> _IO:
        if self.latency_source == "promql" and not (self.latency_query and self.prometheus_url):
            raise ValueError("latency-source promql needs latency-query and prometheus-url")
        return self


class _Copy(BaseModel):
    """Which of program.vars a profiling copy gets its own value for, by the part it plays."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    input_topics: list[str] = Field(min_length=1, alias="input-topics")
    output_topics: list[str] = Field(min_length=1, alias="output-topics")
    group_id: str | None = Field(None, alias="group-id")
    transactional_id_prefix: str | None = Field(None, alias="transactional-id-prefix")
    job_name: str | None = Field(None, alias="job-name")
    event_time_fields: list[str] = Field(default_factory=list, alias="event-time-fields")

    def parts(self) -> tuple[tuple[str, str], ...]:
        single = (("group-id", self.group_id), ("transactional-id-prefix", self.transactional_id_prefix),
                  ("job-name", self.job_name))
        return (*(("input-topic", v) for v in self.input_topics), *(("output-topic", v) for v in self.output_topics),
                *((part, v) for part, v in single if v))


class _JobFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")  # a pipeline name, one line
    program: _Program | None = None  # None: a job chronos never submits (the Flink operator runs it)
    parallelism: int | None = Field(None, ge=1, le=32768)  # Flink's maximum parallelism, as --parallelism
    flink_config: dict[str, str] = Field(default_factory=dict, alias="flink-config")
    copy_: _Copy | None = Field(None, alias="copy")
    io: _IO


_FILE_FIELDS = ("ca-file", "cert-file", "key-file")


def _files_beside(kafka: dict[str, Any], base: Path) -> dict[str, Any]:
    """The TLS files a job file names, relative to its folder, as absolute paths (its record is read from anywhere)."""
    return {k: (str((base / v).resolve()) if k in _FILE_FIELDS and isinstance(v, str) and "${" not in v else v)
            for k, v in kafka.items()}


def _substitute(value: Any, variables: dict[str, str], where: Path) -> Any:
    if isinstance(value, str):
        def one(match: re.Match[str]) -> str:
            if match.group(1) not in variables:
                raise InvalidInput(f"job file {where}: ${{{match.group(1)}}} has no value")
            return variables[match.group(1)]
        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [_substitute(v, variables, where) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables, where) for k, v in value.items()}
    return value


def load_job_file(path: Path, defaults: dict[str, str], program_required: bool = True,
                  kafka: KafkaSecurity = PLAINTEXT) -> tuple[JobSpec, JobIO]:
    """`kafka`: how chronos's clients reach the job's broker when the file's io says nothing of it."""
    raw = read_mapping(path, "job file", "name, program, io")
    io_raw = raw.get("io")
    if isinstance(io_raw, dict) and isinstance(io_raw.get("kafka"), dict):
        io_raw["kafka"] = _files_beside(io_raw["kafka"], path.parent)
    own_vars = raw.get("program", {}).get("vars", {}) if isinstance(raw.get("program"), dict) else {}
    if not isinstance(own_vars or {}, dict):
        raise InvalidInput(f"invalid job file {path}: program.vars must be a mapping of name: value, "
                           f"not a {type(own_vars).__name__}")
    for name in own_vars or {}:  # a name becomes `${name}` in the program and `--var name=value` for the SQL runner
        if not isinstance(name, str) or not _VARIABLE_NAME.fullmatch(name):
            raise InvalidInput(f"invalid job file {path}: program.vars: SQL variable name {str(name)[:40]!r} is not "
                               "an identifier (letters, digits and _, not starting with a digit, at most 64)")
    variables = {**defaults, **{str(k): str(v) for k, v in (own_vars or {}).items()}}
    try:
        job = _JobFile.model_validate(_substitute(raw, variables, path))
    except ValidationError as exc:
        raise InvalidInput(f"invalid job file {path}: {field_error(exc.errors())}") from exc
    base = path.parent
    program = job.program
    inputs = [job.io.input_topic] if isinstance(job.io.input_topic, str) else job.io.input_topic
    if not inputs:
        raise InvalidInput(f"invalid job file {path}: io.input-topic: give at least one topic")
    try:
        check_bootstrap(job.io.bootstrap)
        for topic in (*inputs, job.io.output_topic):
            check_kafka_name("topic", topic)
        if job.io.prometheus_url:
            check_url(job.io.prometheus_url, "io.prometheus-url")
    except InvalidInput as exc:
        raise InvalidInput(f"invalid job file {path}: {exc}") from None
    io = JobIO(job.io.bootstrap, inputs[0], job.io.output_topic, job.io.timestamp_field, job.io.latency_source,
               job.io.latency_query, job.io.prometheus_url, tuple(inputs[1:]),
               kafka if job.io.kafka is None else job.io.kafka)
    if program is None:
        if program_required:
            raise InvalidInput(f"invalid job file {path}: program: chronos submits this job, so it needs one")
        return JobSpec(job.name, parallelism=job.parallelism, extra_config=tuple(sorted(job.flink_config.items()))), io

    def local(name: str) -> str:
        if _CONTROL.search(name):
            raise InvalidInput(f"job file {path}: the program path {name[:200]!r} holds a control character (a NUL, a "
                               "newline); no file is named so")
        resolved = (base / name).resolve()
        if not Path(name).is_absolute() and not resolved.is_relative_to(base.resolve()):
            raise InvalidInput(f"job file {path}: {name[:200]} lies outside the job file's folder; give its absolute "
                               "path if that is the program meant")
        if not resolved.is_file():
            raise InvalidInput(f"job file {path}: {name[:200]} does not exist as a file (looked at {resolved})")
        return str(resolved)

    config = tuple(sorted(job.flink_config.items()))
    if program.sql:
        for name, value in variables.items():
            check_sql_value(name, value, path)
        sql_path = Path(local(program.sql))
        check_sql_placements(read_text(sql_path, "SQL file"), variables, sql_path, path)
        args: tuple[str, ...] = ("--sql", local(program.sql), "--job-name", job.name,
                                 *(a for k, v in sorted(variables.items()) for a in ("--var", f"{k}={v}")))
        # a copy's SQL gets the copy's values through --var, and its pipeline name through --job-name
        templates = (*args[:3], "${" + JOB_NAME_VAR + "}",
                     *(a for k in sorted(variables) for a in ("--var", f"{k}=${{{k}}}")))
        variables = {**variables, JOB_NAME_VAR: job.name}
        spec = JobSpec(job.name, str(SQL_RUNNER), args, job.parallelism, config)
    elif program.jar:
        templates = tuple(str(a) for a in raw["program"].get("args", ()))
        spec = JobSpec(job.name, "", tuple(program.args), job.parallelism, config, jar=local(program.jar),
                       entry_class=program.entry_class or "")
    else:
        templates = tuple(str(a) for a in raw["program"].get("args", ()))
        spec = JobSpec(job.name, local(program.python or ""), tuple(program.args), job.parallelism, config)
    if job.copy_ is not None:
        copy = job.copy_
        if program.sql and copy.job_name is None:
            copy = copy.model_copy(update={"job_name": JOB_NAME_VAR})
        spec = _with_copy(spec, copy, templates, variables, path)
    return spec, io


def _with_copy(spec: JobSpec, copy: _Copy, templates: tuple[str, ...], variables: dict[str, str],
               path: Path) -> JobSpec:
    """The spec with what a profiling copy needs: every variable the copy section names must be one the
    program's arguments use, or the copy could not get a value of its own for it."""
    used = {name for template in templates for name in _VARIABLE.findall(template)}
    for part, name in copy.parts():
        if name not in variables:
            raise InvalidInput(f"job file {path}: copy names {part} {name!r}, which is not in program.vars")
        if name not in used:
            raise InvalidInput(f"job file {path}: copy names {part} {name!r}, but no program argument uses "
                               f"${{{name}}}: a copy could not get its own {part}")
    try:
        EventTimeFields(tuple(copy.event_time_fields))
    except InvalidInput as exc:
        raise InvalidInput(f"job file {path}: copy: {exc}") from None
    return replace(spec, arg_templates=templates,
                   template_vars=tuple(sorted((k, v) for k, v in variables.items() if k in used)),
                   copy_vars=copy.parts(), event_time_fields=tuple(copy.event_time_fields))
