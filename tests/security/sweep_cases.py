"""The hostile and careless inputs the sweep feeds through the CLI (the goal: "every file, reply and name chronos reads
goes through a bounded gate"): each case builds what it needs in a scratch directory (a file, a crafted state, a
server's misbehaviour, a stranger process) and says what must come of it.

Outcomes:
- `refused`: exit non-zero, one `error:` line holding every needle;
- `said`: exit 0 (an idempotent `stack down` is not a failure), the needles said on stderr;
- `shown`: exit 0, the needles in the output and no raw control character in it.
"""

from __future__ import annotations

import json
import os
import pwd
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chronos.stack.processes import identify
from chronos.stack.state import STATE_FILE
from tests.support.hostile_flink import JOB, Send, endless, json_reply, raw_reply, recorded_routes, silence, trickle

SECRET = "RETpw777"  # a password that must never be printed
ENV_SECRET = "sweep-token-4f1c"  # a token in chronos's environment: never printed either
JOBS = "/jobs/overview"
CHECKPOINTS = f"/jobs/{JOB}/checkpoints"
DETAIL = f"/jobs/{JOB}"
Outcome = Literal["refused", "said", "shown"]


@dataclass
class Scratch:
    """Where a case may write (`root`: HOME, the stack directory, files it hands chronos) and what lies outside
    it that nothing may touch (`victim`: a folder a crafted file names; `strangers`: processes it names)."""

    root: Path
    victim: Path
    url: str = ""
    strangers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    cleanup: list[Callable[[], None]] = field(default_factory=list)  # what a case made outside the test's folder

    @property
    def stack(self) -> Path:
        return self.root / "stack"

    def file(self, name: str, content: str | bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def stranger(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.strangers.append(proc)
        return proc


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # {url}, {root}, {stack}, {victim} and {file} are filled in
    outcome: Outcome
    needles: tuple[str, ...]
    setup: Callable[[Scratch], Any] | None = None  # its result fills {file}
    answers: dict[str, Send | Any] = field(default_factory=dict)  # the server's paths answered otherwise
    after: Callable[[Scratch], None] | None = None  # what must hold of the scratch afterwards
    root_only: bool = False
    absent: tuple[str, ...] = ()  # besides the secrets every case checks: what must not be printed
    within_s: float = 5.0  # a case about a deadline: that deadline, and the CLI's start
    env: dict[str, str] = field(default_factory=dict)  # added to the command's environment


# -- what the cases build ---------------------------------------------------------------------------------------
def nested_yaml(depth: int) -> Callable[[Scratch], Path]:
    return lambda s: s.file(f"deep{depth}.yaml", "name: " + "[" * depth + "]" * depth + "\n")


def jobs_reply(**job: Any) -> Send:
    base = recorded_routes()[JOBS]["jobs"][0]
    return json_reply({"jobs": [{**base, **job}]})


def job_with_name(name: str) -> dict[str, Send]:
    routes = recorded_routes()
    return {JOBS: jobs_reply(name=name), DETAIL: json_reply({**routes[DETAIL], "name": name})}


def checkpoints_json(**completed: Any) -> Any:
    stats = recorded_routes()[CHECKPOINTS]
    return {**stats, "latest": {**stats["latest"], "completed": {**stats["latest"]["completed"], **completed}}}


def checkpoints_with(**completed: Any) -> Send:
    return json_reply(checkpoints_json(**completed))


def job_file(name: str = "q", program: str = "{python: job.py}", topic: str = "a", extra: str = "") -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        s.file("jobs/job.py", "print('never run')\n")
        s.file("jobs/q.sql", "INSERT INTO out SELECT * FROM t WHERE x = ${x};\n")
        return s.file("jobs/job.yaml", f"name: {name}\nprogram: {program}\n{extra}"
                                       f"io: {{bootstrap: 'k:1', input-topic: {topic}, output-topic: b}}\n")
    return build


def experiment(content: bytes, suffix: str = ".yaml") -> Callable[[Scratch], Path]:
    return lambda s: s.file(f"experiment{suffix}", content)


def special(path: str) -> Callable[[Scratch], str]:
    return lambda s: path


def fifo(s: Scratch) -> Path:
    path = s.root / "policy.fifo"
    os.mkfifo(path)
    return path


def _state(s: Scratch, **changes: Any) -> dict[str, Any]:
    """A state file as chronos writes it, of a stack whose JobManager is a stranger recorded exactly (start time,
    `sleep`), changed as the case says."""
    stranger = s.stranger()
    record = identify(stranger.pid, "this stack's JobManager", ("600",), exec_wait_s=5).model_dump()
    stack = s.stack.resolve()
    state: dict[str, Any] = {
        "stack_dir": str(stack), "started_at": 0.0, "kafka_port": 1, "kafka_controller_port": 2, "kafka": None,
        "flink_rest_port": 3, "flink_rpc_port": 4, "prometheus_port_base": 5, "jobmanager": record,
        "taskmanagers": [], "slots": 1, "kafka_lib": "", "connector_jar": "", "services_dir": str(stack),
        "service_user": None}
    for key, value in changes.items():
        if key.startswith("jobmanager."):
            state["jobmanager"][key.split(".", 1)[1]] = value
        else:
            state[key] = value
    return state


def crafted_state(owner: str | None = None, mode: int = 0o600, **changes: Any) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        s.stack.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = s.stack / STATE_FILE
        path.write_text(json.dumps(_state(s, **changes)))
        path.chmod(mode)
        if owner is not None:
            entry = pwd.getpwnam(owner)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        return path
    return build


def state_naming_the_victim(s: Scratch) -> Path:
    """services_dir in the victim folder, which holds a Flink pid file naming a stranger."""
    (s.victim / "flink" / "pid").mkdir(parents=True, exist_ok=True)
    pid_file = s.victim / "flink" / "pid" / "flink-root-standalonesession.pid"
    pid_file.write_text(f"{s.stranger().pid}\n")
    return crafted_state(services_dir=str(s.victim))(s)


def victim_pid_file_kept(s: Scratch) -> None:
    assert (s.victim / "flink" / "pid" / "flink-root-standalonesession.pid").exists(), "the victim's pid file was deleted"


def state_symlink(s: Scratch) -> Path:
    real = crafted_state()(s)
    target = s.victim / "elsewhere.json"
    target.write_text(real.read_text())
    real.unlink()
    real.symlink_to(target)
    return real


def helper_record(pid: int) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        path = s.stack / "helpers" / "load.pid.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": pid, "role": "load", "argv_marks": ["x"], "started_s": 1.0}))
        return path
    return build


def odd_pid_file(s: Scratch) -> Path:
    crafted_state(**{"jobmanager.started_s": 1.0})(s)  # the stranger started later: a stale entry
    pid_dir = s.stack / "flink" / "pid"
    pid_dir.mkdir(parents=True)
    (pid_dir / "flink-root-standalonesession.pid").write_text("²\n-1\n0\n99999999999\n")
    return s.stack


def database(kind: str) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        path = s.root / f"{kind}.db"
        if kind == "foreign":
            with sqlite3.connect(path) as db:
                db.execute("CREATE TABLE users (name TEXT, password TEXT)")
                db.execute("INSERT INTO users VALUES ('alice', 'x')")
        elif kind == "text":
            path.write_text("not a database\n")
        elif kind == "version":
            with sqlite3.connect(path) as db:
                db.execute("CREATE TABLE chronos_tune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("INSERT INTO chronos_tune_meta VALUES ('schema_version', 'abc')")
        return path
    return build


def foreign_db_untouched(s: Scratch) -> None:
    with sqlite3.connect(f"file:{s.root / 'foreign.db'}?mode=ro", uri=True) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["users"], tables


def dev_null_journal_absent(s: Scratch) -> None:
    assert not Path("/dev/null-journal").exists(), "a journal file was left in /dev"


def job_record(text: str) -> Callable[[Scratch], Path]:
    def build(s: Scratch) -> Path:
        return s.file(f"stack/jobs/{JOB}.json", text)
    return build


def no_job_record_written(s: Scratch) -> None:
    jobs = s.stack / "jobs"
    assert not jobs.exists() or list(jobs.iterdir()) == [], list(jobs.iterdir())


BAD_URL = "is not a URL chronos takes"
ADOPT = ("job", "adopt", JOB, "--file", "{file}", "--rest-url", "{url}", "--bootstrap", "k:1")
TUNE = ("tune", "--latency-p99", "1s", "--recovery", "30s", "--metrics-port", "-1")


def cases() -> list[Case]:
    big_json = b'{"title": "' + b"x" * (2 << 20) + b'"}'
    return [
        # 1. replies that are slow, endless, huge, deep, or hold numbers no Flink sends
        Case("reply-trickles-its-body", ("job", "list", "--rest-url", "{url}"), "refused", ("did not answer",),
             answers={JOBS: trickle(0.5)}),
        Case("reply-trickles-its-headers", ("job", "list", "--rest-url", "{url}"), "refused", ("did not answer",),
             answers={JOBS: trickle(0.5, headers_too=True)}),
        Case("status-on-a-trickle", ("status", "--rest-url", "{url}"), "refused", ("did not answer",),
             answers={CHECKPOINTS: trickle(1.0)}),
        Case("server-says-nothing", ("status", "--job", JOB, "--rest-url", "{url}"), "refused", ("did not answer",),
             answers={DETAIL: silence()}),
        Case("reply-of-100-MB", ("job", "list", "--rest-url", "{url}"), "refused", ("100,000,000 bytes", "16 MiB"),
             answers={JOBS: endless(chunked=False, declared=100_000_000)}),
        Case("endless-chunked-reply", ("job", "list", "--rest-url", "{url}"), "refused", ("over 16 MiB",),
             answers={JOBS: endless(chunked=True)}),
        Case("reply-nested-100k-deep", ("job", "list", "--rest-url", "{url}"), "refused", ("nests deeper",),
             answers={JOBS: raw_reply(b"[" * 100_000 + b"]" * 100_000)}),
        Case("reply-nested-33-deep", ("job", "list", "--rest-url", "{url}"), "refused", ("nests deeper than 32",),
             answers={JOBS: raw_reply(b'{"jobs": ' + b"[" * 33 + b"]" * 33 + b"}")}),
        Case("duration-of-400-digits", ("job", "list", "--rest-url", "{url}"), "refused", ("jobs.0.duration",),
             answers={JOBS: raw_reply(json.dumps({"jobs": [{**recorded_routes()[JOBS]["jobs"][0], "duration": 0}]})
                                      .replace('"duration": 0', '"duration": ' + "9" * 400).encode())}),
        Case("duration-past-2**53", ("job", "list", "--rest-url", "{url}"), "refused", ("jobs.0.duration",),
             answers={JOBS: jobs_reply(duration=2**53 + 1)}),
        Case("negative-duration", ("job", "list", "--rest-url", "{url}"), "refused", ("jobs.0.duration",),
             answers={JOBS: jobs_reply(duration=-5)}),
        Case("unknown-duration-shown-as-dash", ("job", "list", "--rest-url", "{url}"), "shown", (" - ",),
             answers={JOBS: jobs_reply(duration=-1)}),
        Case("state-size-of-400-digits", ("status", "--job", JOB, "--rest-url", "{url}"), "refused", ("state_size",),
             answers={CHECKPOINTS: raw_reply(json.dumps(checkpoints_json(state_size=123456789)).replace(
                 "123456789", "9" * 400).encode())}),
        Case("negative-state-size", ("status", "--job", JOB, "--rest-url", "{url}"), "refused", ("state_size",),
             answers={CHECKPOINTS: checkpoints_with(state_size=-4096)}),
        Case("nan-in-a-reply", ("job", "list", "--rest-url", "{url}"), "refused", ("not valid JSON",),
             answers={JOBS: raw_reply(b'{"jobs": [{"duration": NaN}]}')}),
        Case("reply-not-json", ("job", "list", "--rest-url", "{url}"), "refused", ("not valid JSON",),
             answers={JOBS: raw_reply(b"<html>hello</html>", content_type="text/html")}),
        Case("reply-not-utf8", ("job", "list", "--rest-url", "{url}"), "refused", ("not UTF-8",),
             answers={JOBS: raw_reply(b'{"jobs": "\xff\xfe"}')}),
        Case("vertex-id-is-a-path", ("status", "--job", JOB, "--rest-url", "{url}"), "refused", ("vertices.0.id",),
             answers={DETAIL: json_reply({**recorded_routes()[DETAIL], "vertices": [
                 {**recorded_routes()[DETAIL]["vertices"][0], "id": "../../jobs"}]})}),
        Case("taskmanager-id-is-a-path", ("recommend", "--rest-url", "{url}", "--watch", "1s"), "refused",
             ("taskmanagers.0.id",),
             answers={"/taskmanagers": json_reply({"taskmanagers": [
                 {**recorded_routes()["/taskmanagers"]["taskmanagers"][0], "id": "x/../../jars?y"}]})}),
        # 2. files nested deep, not text, too large, not files at all
        Case("policy-nested-2000-deep", ("tune", "--config", "{file}", "--latency-p99", "1s", "--recovery", "60s"),
             "refused", ("nests deeper than 64",), setup=nested_yaml(2000)),
        Case("policy-nested-100k-deep", ("tune", "--config", "{file}", "--latency-p99", "1s", "--recovery", "60s"),
             "refused", ("nests deeper than 64",), setup=nested_yaml(100_000)),
        Case("policy-nested-65-deep", ("tune", "--config", "{file}", "--latency-p99", "1s", "--recovery", "60s"),
             "refused", ("nests deeper than 64",), setup=nested_yaml(65)),
        Case("job-file-nested-2000-deep", ADOPT, "refused", ("nests deeper",), setup=nested_yaml(2000)),
        Case("experiment-in-latin-1", ("chaos", "run", "{file}"), "refused", ("not UTF-8", "0xe9"),
             setup=experiment("title: caf\xe9\n".encode("latin-1"))),
        Case("experiment-binary", ("chaos", "run", "{file}"), "refused", ("not UTF-8",),
             setup=experiment(bytes(range(256)) * 4)),
        Case("experiment-json-of-2-MB", ("chaos", "run", "{file}"), "refused", ("over 1024 KiB",),
             setup=experiment(big_json, ".json")),
        Case("experiment-json-nested", ("chaos", "run", "{file}"), "refused", ("nests deeper",),
             setup=experiment(b"[" * 50_000 + b"]" * 50_000, ".json")),
        Case("experiment-json-nan", ("chaos", "run", "{file}"), "refused", ("not valid JSON",),
             setup=experiment(b'{"title": NaN}', ".json")),
        Case("policy-is-a-fifo", ("tune", "--config", "{file}"), "refused", ("is a FIFO",), setup=fifo),
        Case("policy-is-dev-zero", ("tune", "--config", "{file}"), "refused", ("is a device",),
             setup=special("/dev/zero")),
        Case("policy-is-a-directory", ("tune", "--config", "{file}"), "refused", ("is a directory",),
             setup=special("/tmp")),
        Case("policy-integer-of-5000-digits", ("tune", "--config", "{file}"), "refused", ("over 4300 digits",),
             setup=lambda s: s.file("big.yaml", "recovery_s: " + "9" * 5000 + "\n")),
        Case("policy-unhashable-key", ("tune", "--config", "{file}"), "refused", ("not valid YAML",),
             setup=lambda s: s.file("key.yaml", "? [a, b]\n: 1\n")),
        Case("experiment-yaml-alias", ("chaos", "run", "{file}"), "refused", ("YAML alias",),
             setup=experiment(b"a: &a [x]\nb: *a\n")),
        Case("policy-python-tag", ("tune", "--config", "{file}"), "refused", ("not valid YAML",),
             setup=lambda s: s.file("tag.yaml", f"a: !!python/object/apply:os.system ['touch {s.root}/pwned']\n"),
             after=lambda s: _absent(s.root / "pwned")),
        Case("policy-empty", ("tune", "--config", "{file}"), "refused", ("must be a mapping",),
             setup=lambda s: s.file("empty.yaml", "")),
        Case("experiment-empty", ("chaos", "run", "{file}"), "refused", ("an experiment is a mapping",),
             setup=experiment(b"")),
        Case("rate-trace-is-a-fifo", ("load", "run", "--profile", "csv", "--trace", "{file}", "--count", "1",
                                      "--bootstrap", "127.0.0.1:9"), "refused", ("is a FIFO",), setup=fifo),
        # 3. state files someone else could have written, or naming what is not the stack's
        Case("state-owned-by-another-user", ("stack", "down"), "said", ("not trusted", "belongs to uid"),
             setup=crafted_state(owner="nobody"), root_only=True),
        Case("state-owned-by-another-user-empty-marks", ("stack", "down"), "said", ("not trusted",),
             setup=crafted_state(owner="nobody", **{"jobmanager.argv_marks": []}), root_only=True),
        Case("state-with-empty-marks", ("stack", "down"), "said", ("argv_marks",),
             setup=crafted_state(**{"jobmanager.argv_marks": []})),
        Case("state-with-an-empty-mark", ("stack", "down"), "said", ("argv_marks",),
             setup=crafted_state(**{"jobmanager.argv_marks": [""]})),
        Case("state-writable-by-others", ("stack", "down"), "said", ("writable by other users",),
             setup=crafted_state(mode=0o666)),
        Case("state-is-a-symlink", ("stack", "down"), "said", ("symlink",), setup=state_symlink),
        Case("state-names-another-services-dir", ("stack", "down", "--purge"), "said", ("puts the services in",),
             setup=state_naming_the_victim, after=victim_pid_file_kept),
        Case("state-of-another-stack-dir", ("status",), "refused", ("describes the stack in",),
             setup=crafted_state(stack_dir="/")),
        Case("state-pid-minus-one", ("status",), "refused", ("jobmanager.pid",),
             setup=crafted_state(**{"jobmanager.pid": -1})),
        Case("state-pid-minus-one-down", ("stack", "down"), "said", ("jobmanager.pid",),
             setup=crafted_state(**{"jobmanager.pid": -1}), after=lambda s: _state_gone(s)),
        Case("state-pid-one", ("stack", "down"), "said", ("jobmanager.pid",),
             setup=crafted_state(**{"jobmanager.pid": 1})),
        Case("state-port-of-a-million", ("status",), "refused", ("flink_rest_port",),
             setup=crafted_state(flink_rest_port=1_000_000)),
        Case("state-with-a-mark-of-5000", ("status",), "refused", ("argv_marks",),
             setup=crafted_state(**{"jobmanager.argv_marks": ["x" * 5000]})),
        Case("state-not-json", ("status",), "refused", ("cannot be read",),
             setup=lambda s: s.file("stack/stack.json", "{\"stack_dir\": ")),
        Case("helper-record-pid-minus-one", ("stack", "down"), "said", ("nothing was running",),
             setup=helper_record(-1)),
        Case("pid-file-holding-superscript-two", ("stack", "down"), "said", ("stale entry",), setup=odd_pid_file),
        # 4. databases that are not chronos's
        Case("db-of-another-program", (*TUNE, "--db", "{file}"), "refused", ("another program's database", "users"),
             setup=database("foreign"), after=foreign_db_untouched),
        Case("db-of-another-program-retune", ("job", "retune", JOB, "--interval", "5s", "--db", "{file}"), "refused",
             ("another program's database",), setup=lambda s: (job_record(_record_text())(s), database("foreign")(s))[1],
             after=foreign_db_untouched),
        Case("db-dev-null", (*TUNE, "--db", "/dev/null"), "refused", ("not a regular file",),
             after=dev_null_journal_absent),
        Case("db-symlink-to-dev-null", (*TUNE, "--db", "{file}"), "refused", ("not a regular file",),
             setup=lambda s: _symlink(s.root / "null.db", Path("/dev/null")), after=dev_null_journal_absent),
        Case("db-text-file", ("profile", "report", "--db", "{file}"), "refused", ("not SQLite",),
             setup=database("text")),
        Case("db-schema-version-abc", (*TUNE, "--db", "{file}"), "refused", ("schema version 'abc'",),
             setup=database("version")),
        # 5. job ids that are not one
        Case("job-id-with-newline", ("status", "--job", JOB + "\n", "--rest-url", "{url}"), "refused",
             ("not a Flink job id",)),
        Case("job-id-of-31-digits", ("status", "--job", JOB[:31], "--rest-url", "{url}"), "refused",
             ("not a Flink job id",)),
        Case("job-id-upper-case", ("status", "--job", JOB.upper(), "--rest-url", "{url}"), "refused",
             ("not a Flink job id",)),
        Case("job-id-is-a-path", ("job", "retune", "../../" + JOB, "--interval", "5s"), "refused",
             ("not submitted by chronos",), after=no_job_record_written),
        Case("submitted-job-id-with-newline", ("job", "adopt", JOB + "\n", "--file", "{file}", "--rest-url", "{url}"),
             "refused", ("not a Flink job id",), setup=job_file(), after=no_job_record_written),
        Case("listed-job-id-with-newline", ("job", "list", "--rest-url", "{url}"), "refused", ("jid",),
             answers={JOBS: jobs_reply(jid=JOB + "\n")}),
        # 6. strings that would act on the terminal
        Case("job-named-as-markup", ("job", "list", "--rest-url", "{url}"), "shown", ("[/oops]",),
             answers=job_with_name("[/oops] [bold]x")),
        Case("job-named-with-escapes", ("status", "--rest-url", "{url}"), "shown", ("\\x1b]0;pwned\\x07\\x1b[2J",),
             answers=job_with_name("\x1b]0;pwned\x07\x1b[2J")),
        Case("job-named-with-c1-csi", ("job", "list", "--rest-url", "{url}"), "shown", ("\\x9b2J",),
             answers=job_with_name("a\x9b2J")),
        Case("flink-error-with-escapes", ("status", "--job", JOB, "--rest-url", "{url}"), "refused",
             ("\\x1b[2J",), answers={DETAIL: json_reply({"errors": ["bad \x1b[2J [/x]"]}, 500)}),
        # 7. job records that are not whole
        Case("job-record-cut-short", ("job", "retune", JOB, "--interval", "5s", "--rest-url", "{url}"), "refused",
             ("job record", "not valid JSON"), setup=job_record('{"job_id": "' + JOB)),
        Case("job-record-wrong-type", ("job", "retune", JOB, "--interval", "5s", "--rest-url", "{url}"), "refused",
             ("job record", "spec"), setup=job_record(json.dumps({"job_id": JOB, "spec": {"name": 5},
                                                                  "settings": {"interval_ms": 1000}}))),
        Case("job-record-of-another-job", ("job", "retune", JOB, "--interval", "5s", "--rest-url", "{url}"), "refused",
             ("names job",), setup=job_record(_record_text(job_id="f" * 32))),
        Case("job-record-writable-by-others", ("job", "retune", JOB, "--interval", "5s", "--rest-url", "{url}"),
             "refused", ("writable by other users",), setup=lambda s: _chmod(job_record(_record_text())(s), 0o666)),
        # 8. credentials in URLs
        Case("password-with-at", ("job", "list", "--rest-url", f"http://admin:SEK@{SECRET}@127.0.0.1:9"), "refused",
             (BAD_URL,)),
        Case("password-with-space", ("job", "list", "--rest-url", f"http://admin:SEK {SECRET}@127.0.0.1:9"),
             "refused", (BAD_URL,)),
        Case("password-with-slash", ("job", "list", "--rest-url", f"http://admin:SEK/{SECRET}@127.0.0.1:9"),
             "refused", (BAD_URL,)),
        Case("password-unreachable", ("job", "list", "--rest-url", f"http://admin:{SECRET}@127.0.0.1:9"), "refused",
             ("cannot reach", "***@127.0.0.1:9")),
        Case("reporter-url-with-at", (*TUNE, "--job", JOB, "--rest-url", "{url}", "--reporter-url",
                                      f"http://u:{SECRET}@x@127.0.0.1:9/metrics"), "refused", (BAD_URL,)),
        Case("rest-url-port-0", ("job", "list", "--rest-url", "http://127.0.0.1:0"), "refused", (BAD_URL,)),
        Case("prometheus-url-ftp", ("report", "--prometheus", f"ftp://u:{SECRET}@h/"), "refused", (BAD_URL,)),
        # 9. accepted silently before
        Case("demo-window-negative", ("job", "submit", "--window", "-5"), "refused", ("--window",)),
        Case("parallelism-of-20-digits", ("job", "submit", "--parallelism", "9" * 20), "refused", ("--parallelism",)),
        Case("load-workers-zero", ("load", "run", "--workers", "0"), "refused", ("--workers",)),
        Case("slots-of-a-million", ("stack", "up", "--slots", "1000000"), "refused", ("--slots",)),
        Case("job-name-with-newline", ADOPT, "refused", ("invalid job file", "name: String should match pattern"),
             setup=job_file(name='"a\\nb"')),
        Case("job-name-with-escape", ADOPT, "refused", ("invalid job file", "name: String should match pattern"),
             setup=job_file(name='"a\\e[2Jb"')),
        Case("program-outside-the-folder", ADOPT, "refused", ("outside the job file's folder",),
             setup=job_file(program="{python: ../../../../etc/passwd}")),
        Case("sql-outside-the-folder", ADOPT, "refused", ("outside the job file's folder",),
             setup=job_file(program="{sql: ../../../etc/shadow}")),
        Case("topic-with-dot-dot", ADOPT, "refused", ("invalid topic",), setup=job_file(topic="'../x'")),
        Case("topic-with-slashes", ADOPT, "refused", ("invalid topic",), setup=job_file(topic="'a/b\\c'")),
        Case("topic-dot", ADOPT, "refused", ("invalid topic",), setup=job_file(topic="'.'")),
        Case("topic-of-250", ADOPT, "refused", ("invalid topic",), setup=job_file(topic="t" * 250)),
        Case("sql-var-as-identifier", ADOPT, "refused", ("outside quotes",),
             setup=job_file(program="{sql: q.sql, vars: {x: 'x) UNION SELECT 1 FROM y WHERE (1'}}")),
        Case("bootstrap-with-newline", ADOPT, "refused", ("bootstrap",),
             setup=lambda s: s.file("jobs/job.yaml", "name: q\nio: {bootstrap: \"k:1\\nx\", input-topic: a, "
                                                     "output-topic: b}\n")),
        Case("promql-url-with-at", ADOPT, "refused", (BAD_URL,),
             setup=lambda s: s.file("jobs/job.yaml", "name: q\nio: {bootstrap: 'k:1', input-topic: a, output-topic: b, "
                                                     f"latency-source: promql, latency-query: up, prometheus-url: "
                                                     f"'http://a:{SECRET}@b@h'}}\n")),
    ]


def _state_gone(s: Scratch) -> None:
    assert not (s.stack / STATE_FILE).exists(), "down did not clear the state it refused"


def _absent(path: Path) -> None:
    assert not path.exists(), f"{path} was made"


def _symlink(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _chmod(path: Path, mode: int) -> Path:
    path.chmod(mode)
    return path


def _record_text(job_id: str = JOB) -> str:
    return json.dumps({"job_id": job_id, "spec": {"name": "chronos-vehicle-stats", "python_file": "/nonexistent.py"},
                       "settings": {"interval_ms": 10000}})
