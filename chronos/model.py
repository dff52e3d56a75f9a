"""Value types that cross module boundaries; they do no I/O and import nothing of chronos."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import InvalidInput

_DURATION = re.compile(r"^\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|s|sec|min|m|h)?\s*$")
MAX_DURATION_MS = 400 * 24 * 3_600_000  # no interval, window or report range chronos handles is over 400 days
MAX_SECONDS = MAX_DURATION_MS / 1000
MIN_SECONDS = 0.001  # the shortest duration a flag takes (1ms): a file or a reply is bounded the same way
_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def parse_interval_ms(text: str) -> int:
    """Parse "500ms", "10s", "2min", "1h" or a bare number of seconds into positive milliseconds.

    Flink accepts the same spellings; rejecting "-5s", "0s" or "abc" here means a bad value never
    reaches a running job as a failed resubmission.
    """
    match = _DURATION.match(text)
    shown = text if len(text) <= 40 else text[:37] + "..."
    if match is None:
        raise InvalidInput(
            f"invalid interval {shown!r}: expected a positive duration such as 500ms, 10s, 2min"
        )
    value, unit = float(match.group(1)), match.group(2) or "s"
    millis = round(value * _UNIT_MS[unit])
    if millis <= 0:
        raise InvalidInput(f"invalid interval {shown!r}: it must be greater than zero")
    if millis > MAX_DURATION_MS:
        raise InvalidInput(f"invalid interval {shown!r}: at most 400 days")
    return millis


@dataclass(frozen=True)
class RunAs:
    """Who a child process chronos starts for the stack runs as, and the only environment it gets: the
    stack's services never run as root and never see chronos's whole environment (tokens, keys)."""

    uid: int | None  # None: chronos's own user
    gid: int | None
    env: tuple[tuple[str, str], ...]

    def popen_kwargs(self) -> dict[str, Any]:
        """`subprocess` arguments: this user (no supplementary groups), private files (umask 077)."""
        if self.uid is None:
            return {"umask": 0o077}
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": 0o077}


_BOOTSTRAP = re.compile(r"[A-Za-z0-9._\[\]:-]+:\d{1,5}(, ?[A-Za-z0-9._\[\]:-]+:\d{1,5})*")
_KAFKA_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_bootstrap(text: str) -> str:
    """A Kafka bootstrap list (`host:port[,host:port]`): it is pasted into job configs and SQL, so
    nothing else gets through."""
    if (not isinstance(text, str) or len(text) > 4096 or not _BOOTSTRAP.fullmatch(text)
            or not all(1 <= int(item.rpartition(":")[2]) <= 65535 for item in text.split(","))):
        raise InvalidInput(f"invalid Kafka bootstrap {str(text)[:200]!r}: expected host:port[,host:port...]")
    return text


def check_kafka_name(what: str, text: str) -> str:
    """A topic, group id or pipeline name chronos builds into SQL: Kafka's legal characters only (and neither
    '.' nor '..', which Kafka refuses as topic names)."""
    if not isinstance(text, str) or not _KAFKA_NAME.fullmatch(text) or text in {".", ".."}:
        raise InvalidInput(f"invalid {what} {str(text)[:80]!r}: use letters, digits, '.', '_' and '-' (at most 249)")
    return text


# Kubernetes names (RFC 1123): a namespace is a DNS label, an object's name a DNS subdomain. They become URL paths
# of the API server and parts of job names: `..`, `a/b`, `a?watch=true` or an empty name would address something else.
_KUBE_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_KUBE_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")


def check_kube_namespace(text: str, what: str = "namespace") -> str:
    if not isinstance(text, str) or not _KUBE_LABEL.fullmatch(text):
        raise InvalidInput(f"{what} {str(text)[:80]!r} is not a Kubernetes namespace (RFC 1123 label: lower-case "
                           "letters, digits and '-', at most 63)")
    return text


def check_kube_name(text: str, what: str = "name") -> str:
    if not isinstance(text, str) or len(text) > 253 or not _KUBE_NAME.fullmatch(text):
        raise InvalidInput(f"{what} {str(text)[:80]!r} is not a Kubernetes object name (RFC 1123 subdomain: lower-case "
                           "letters, digits, '-' and '.', at most 253)")
    return text


# http(s)://[user[:password]@]host[:port][/path]: nothing in it unencoded that moves where the userinfo ends
# (an @, a / or a space in a password), so what is hidden as credentials is exactly what is sent as them.
# No control character anywhere (httpx refuses one in a path as an invalid URL, deep inside a command).
_URL = re.compile(r"(?P<scheme>https?)://(?:(?P<userinfo>[^\s/?#@\\\x00-\x1f\x7f-\x9f\ud800-\udfff]*)@)?"
                  r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])"
                  r"(?::(?P<port>\d{1,5}))?(?P<path>/[^\s@\\\x00-\x1f\x7f-\x9f\ud800-\udfff]*)?")


def check_url(text: str, what: str) -> str:
    """`text` if it is a plain http(s) URL, else one line that does not repeat it (it may hold a password)."""
    found = _URL.fullmatch(text) if isinstance(text, str) and len(text) <= 2048 else None
    if found is None or (found.group("port") is not None and not 1 <= int(found.group("port")) <= 65535):
        raise InvalidInput(f"{what} is not a URL chronos takes: http(s)://[user:password@]host[:port][/path], with "
                           "'@', '/' and spaces in a password percent-encoded (not repeated here: it may hold one)")
    return text


def path_safe(name: str) -> str:
    """A job name as one harmless path component: Flink allows any pipeline name (`../../x` too), so a
    name never becomes a path as it is."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:60]
    return slug or "job"


def format_interval(millis: int) -> str:
    """The shortest exact Flink duration string for a number of milliseconds."""
    if millis % 60_000 == 0:
        return f"{millis // 60_000}min"
    if millis % 1000 == 0:
        return f"{millis // 1000}s"
    return f"{millis}ms"


@dataclass(frozen=True)
class JobSpec:
    """What to run to (re)create a job: a PyFlink program (a SQL file runs through chronos's SQL
    runner, itself a PyFlink program) or a jar with its entry class, and the program's arguments.

    A running Flink job cannot tell us how to start it again; resubmission from a savepoint with a
    new interval needs this spec, kept alongside the job. `name` is the Flink pipeline name.
    """

    name: str
    python_file: str = ""
    args: tuple[str, ...] = ()
    parallelism: int | None = None
    extra_config: tuple[tuple[str, str], ...] = field(default=())
    jar: str = ""  # a jar job: the jar's path and its entry class (python_file stays empty)
    entry_class: str = ""
    # How a profiling copy is made, from a job file's `copy:` section: `args` before its ${variables} were filled
    # in, the values they were filled with, and which variable plays which part (input-topic, output-topic,
    # group-id, transactional-id-prefix, job-name; a part may be played by several). Empty: not described.
    arg_templates: tuple[str, ...] = ()
    template_vars: tuple[tuple[str, str], ...] = ()
    copy_vars: tuple[tuple[str, str], ...] = ()  # (part, variable)
    # JSON paths into an input record's value of the times a replay moves to its own now (job file:
    # copy.event-time-fields); the record's Kafka timestamp always moves.
    event_time_fields: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "jar" if self.jar else "python"

    @property
    def commits_on_checkpoint(self) -> bool:
        """Whether the job's output is transactional (an exactly-once Kafka sink): it names a transactional-id prefix,
        in its job file's copy section or as the built-in jobs' flag. Such output becomes visible only when the
        checkpoint after it completes, so its latency cannot fall as the interval grows (tests/integration/
        test_paced_checkpoints.py: the committed output's p99 follows the cadence); the p99 model is fitted rising."""
        flag = "--transactional-id-prefix"
        return (any(part == "transactional-id-prefix" for part, _ in self.copy_vars)
                or any(a == flag or a.startswith(flag + "=") for a in self.args))

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> JobSpec:
        """The one decoder of a spec written as `asdict(spec)` (job records, profile settings); fields added
        since take their defaults, so older files still read."""
        return JobSpec(name=str(data["name"]), python_file=str(data.get("python_file", "")),
                       args=tuple(str(a) for a in data.get("args", ())), parallelism=data.get("parallelism"),
                       extra_config=tuple((str(k), str(v)) for k, v in data.get("extra_config", ())),
                       jar=str(data.get("jar", "")), entry_class=str(data.get("entry_class", "")),
                       arg_templates=tuple(str(a) for a in data.get("arg_templates", ())),
                       template_vars=tuple((str(k), str(v)) for k, v in data.get("template_vars", ())),
                       copy_vars=tuple((str(k), str(v)) for k, v in data.get("copy_vars", ())),
                       event_time_fields=tuple(str(f) for f in data.get("event_time_fields", ())))


@dataclass(frozen=True)
class JobIO:
    """Where a job reads and writes, so chronos can measure it from outside: the input topic's end
    offsets give the arrival rate; each committed output record's `timestamp_field` (epoch ms of the
    newest input it covers) gives end-to-end latency when it becomes visible."""

    bootstrap: str
    input_topic: str
    output_topic: str
    timestamp_field: str = "max_created_ms"
    latency_source: str = "output"  # output | flink-latency | promql
    latency_query: str = ""  # promql: a query whose first sample is the p99 in seconds
    prometheus_url: str = ""
    more_input_topics: tuple[str, ...] = ()  # a job reading several topics: the others (their rates add up)
    kafka: KafkaSecurity = PLAINTEXT  # how chronos's clients log in to its broker (references to secrets only)

    @property
    def input_topics(self) -> tuple[str, ...]:
        return (self.input_topic, *self.more_input_topics)


@dataclass(frozen=True)
class CheckpointSettings:
    """The fault-tolerance knobs chronos changes between runs."""

    interval_ms: int
    state_backend: str = "hashmap"
    incremental: bool = False

    def flink_config(self) -> dict[str, str]:
        return {
            "execution.checkpointing.interval": format_interval(self.interval_ms),
            "state.backend.type": self.state_backend,
            "execution.checkpointing.incremental": str(self.incremental).lower(),
        }


@dataclass(frozen=True)
class CheckpointEvent:
    """One completed checkpoint, as the chaos timing strategies need it (wall-clock milliseconds)."""

    checkpoint_id: int
    trigger_ms: int
    completed_ms: int
    duration_ms: int
    state_bytes: int = 0


@dataclass(frozen=True)
class CheckpointHistory:
    """A job's configured interval and its completed checkpoints, oldest first."""

    interval_ms: int
    completed: tuple[CheckpointEvent, ...] = ()


# Flink job states from which a job never runs again (JobStatus.isGloballyTerminalState).
TERMINAL_STATES: frozenset[str] = frozenset({"FINISHED", "CANCELED", "FAILED"})

# The sources a live reading is made of; a failure of one is said per source.
SOURCES = ("flink-rest", "kafka", "reporter", "latency", "collector")


@dataclass(frozen=True)
class SourceFailure:
    """A source that could not be read for one reading: a missing value, never a crash. `attempted` is
    False when the source was not asked at all because it is backing off after failing."""

    source: str  # one of SOURCES
    error: str  # one line: what went wrong
    attempted: bool = True


def describe(exc: BaseException) -> str:
    """An exception as one line (its type, and its message's first line if it has one)."""
    name, text = type(exc).__name__, str(exc).strip().splitlines()
    if not text:
        return name
    return text[0][:200] if text[0].startswith(name) else f"{name}: {text[0][:200]}"


@dataclass(frozen=True)
class SignalSample:
    """What the job looked like at one moment, from sources that survive a TaskManager loss:
    job state from REST, input lag from Kafka offsets, throughput and latency from the output
    observer or the Prometheus reporter. A signal that could not be read is None."""

    at_ms: int
    running: bool
    throughput: float | None = None
    lag: float | None = None
    p99_ms: float | None = None
    input_rate: float | None = None  # events/s arriving, where known: under a changing load it, not the
    # throughput before the fault, says what "keeping up" means


@dataclass(frozen=True)
class FaultRecord:
    """What a fault did and when: wall-clock ms (to line up with Flink's timestamps) and monotonic
    seconds (to measure durations on this host)."""

    kind: str
    target: str
    injected_wall_ms: int
    injected_mono_s: float
    detail: str = ""


@dataclass(frozen=True)
class RecoveryMeasurement:
    """One fault and what it cost. `recovery_s` is None when the job did not get back to its steady
    state before the timeout: such a fault is reported as not recovered, never as a number."""

    fault: FaultRecord
    interval_ms: int
    strategy: str
    detected_ms: int | None
    running_ms: int | None
    recovered_ms: int | None
    recovery_s: float | None
    peak_lag: float | None
    records_reprocessed: int | None
    checkpoint_age_at_fault_ms: int | None
    restored_checkpoint_id: int | None
    # What explains the catch-up (chronos.chaos.catch_up): the backlog when every task ran again, the input rate
    # and the throughput the job drained it with (its capacity), the rate the backlog shrank at.
    backlog_at_restart: float | None = None
    catch_up_input_rate: float | None = None
    capacity: float | None = None
    drain_rate: float | None = None
    # The recovery settings in force (heartbeats, restart strategy; `key`, `value`) and spare TaskManagers.
    settings_in_force: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeliveryCheck:
    """Exactly-once over a bounded input: per key, the events the job read against the events its
    committed output accounts for. `lost` and `duplicated` count events, summed over keys."""

    keys: int
    input_events: int
    output_events: int
    lost: int
    duplicated: int
    keys_short: int
    keys_over: int
    examples: tuple[tuple[str, int, int], ...] = ()  # (key, input, output) of a few keys that differ
    # False: the committed output was still growing when the time was up (a job still catching up): what it lacks
    # is not delivered yet, not proven lost. `lost` then counts events not yet delivered.
    settled: bool = True

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0

    @staticmethod
    def compare(expected: Mapping[str, int], observed: Mapping[str, int], examples: int = 5,
                settled: bool = True) -> DeliveryCheck:
        keys = sorted(set(expected) | set(observed))
        differ = [(k, expected.get(k, 0), observed.get(k, 0)) for k in keys if expected.get(k, 0) != observed.get(k, 0)]
        return DeliveryCheck(
            keys=len(keys),
            input_events=sum(expected.values()),
            output_events=sum(observed.values()),
            lost=sum(i - o for _, i, o in differ if o < i),
            duplicated=sum(o - i for _, i, o in differ if o > i),
            keys_short=sum(1 for _, i, o in differ if o < i),
            keys_over=sum(1 for _, i, o in differ if o > i),
            examples=tuple(differ[:examples]),
            settled=settled,
        )

    def summary(self) -> str:
        if not self.settled and self.lost and not self.duplicated:
            return (f"exactly-once NOT DECIDED: the committed output was still growing when the time was up; "
                    f"{self.lost:,} of {self.input_events:,} input events not delivered yet over {self.keys_short:,} "
                    "keys, none duplicated")
        if self.ok:
            return (f"exactly-once held: {self.input_events:,} input events over {self.keys:,} keys, "
                    "committed output equals the input per key")
        return (f"exactly-once VIOLATED: {self.lost:,} events lost over {self.keys_short:,} keys, "
                f"{self.duplicated:,} duplicated over {self.keys_over:,} keys "
                f"(input {self.input_events:,}, output {self.output_events:,})")


@dataclass(frozen=True)
class ClusterShape:
    """What a cluster restart puts in force: checked Flink settings laid over the cluster's own (`key`, `value`),
    and TaskManagers kept idle beside the ones the jobs need (a restart lands on them at once)."""

    flink_settings: tuple[tuple[str, str], ...] = ()
    spare_taskmanagers: int = 0

    def lines(self) -> list[str]:
        spare = [f"spare TaskManagers: {self.spare_taskmanagers}"] if self.spare_taskmanagers else []
        return [f"{k}: {v}" for k, v in self.flink_settings] + spare


@dataclass(frozen=True)
class ReconfigurePlan:
    """A cluster reconfiguration, written before anything is touched so an interrupted one can be finished."""

    target: ClusterShape
    job_ids: tuple[str, ...]  # the jobs running when it began (their ids on the cluster before the restart)
