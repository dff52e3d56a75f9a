"""The Flink settings chronos proposes and applies to shorten recovery, checked against the Flink version that
will read them, and turned into `RecoverySettings` (what the phase model reasons with) and back.

Why a catalog and not "any key": Flink ignores a key it does not know (a misspelt or renamed setting is silently
a no-op, and the recovery it was meant to shorten stays long), so a key is refused in one line naming it, and a
key renamed between versions says its new name (Flink 2.0 renamed `state.backend.local-recovery` to
`execution.state-recovery.from-local`). Values are checked too: a duration Flink cannot parse would stop the
cluster from starting. Pure: strings in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from chronos.errors import InvalidInput
from chronos.optimizer.phase_model import RecoverySettings

Kind = Literal["duration", "count", "bool", "choice"]
Version = tuple[int, int]


@dataclass(frozen=True)
class SettingSpec:
    key: str
    kind: Kind
    scope: Literal["cluster", "job"]  # cluster: read when a JobManager/TaskManager starts; job: at submission
    what: str
    since: Version = (1, 0)
    until: Version | None = None  # the first version that no longer knows it
    renamed_to: str | None = None
    choices: tuple[str, ...] = ()


CATALOG: tuple[SettingSpec, ...] = (
    SettingSpec("heartbeat.interval", "duration", "cluster", "how often heartbeats are sent"),
    SettingSpec("heartbeat.timeout", "duration", "cluster", "silence after which a peer is declared dead "
                "(the only way a hung TaskManager is found)"),
    SettingSpec("heartbeat.rpc-failure-threshold", "count", "cluster",
                "consecutive failed heartbeat RPCs that declare a TaskManager dead (a killed one is found so)",
                since=(1, 14)),
    SettingSpec("restart-strategy.type", "choice", "job", "the restart strategy",
                choices=("fixed-delay", "exponential-delay", "failure-rate", "none", "disable", "off")),
    SettingSpec("restart-strategy.fixed-delay.delay", "duration", "job", "wait before each restart"),
    SettingSpec("restart-strategy.fixed-delay.attempts", "count", "job", "restarts before the job fails"),
    SettingSpec("restart-strategy.exponential-delay.initial-backoff", "duration", "job", "first restart's wait"),
    SettingSpec("restart-strategy.failure-rate.delay", "duration", "job", "wait before each restart"),
    SettingSpec("slotmanager.redundant-taskmanager-num", "count", "cluster",
                "TaskManagers kept beyond what jobs need, so a restart need not wait for a new one "
                "(only where Flink's resource manager starts TaskManagers, e.g. on Kubernetes)"),
    SettingSpec("execution.state-recovery.from-local", "bool", "job",
                "restore from a TaskManager-local copy of state", since=(2, 0)),
    SettingSpec("state.backend.local-recovery", "bool", "job", "restore from a TaskManager-local copy of state",
                until=(2, 0), renamed_to="execution.state-recovery.from-local"),
)

_BY_KEY = {spec.key: spec for spec in CATALOG}
SPARE_KEY = "chronos.spare-taskmanagers"  # beside the Flink keys in a recovery's settings in force: the cluster's shape
_UNITS = {"ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
          "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
          "min": 60.0, "m": 60.0, "minute": 60.0, "minutes": 60.0,
          "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


def parse_version(text: str) -> Version:
    match = re.match(r"^\s*(\d+)\.(\d+)", text)
    if not match:
        raise InvalidInput(f"not a Flink version: {text!r}")
    return int(match.group(1)), int(match.group(2))


def duration_s(key: str, value: str) -> float:
    """Flink's duration syntax (`TimeUtils.parseDuration`): an integer and an optional unit, ms when none."""
    match = _DURATION.match(value.lower())
    if not match or match.group(2) not in {"", *_UNITS}:
        raise InvalidInput(f"{key}: {value!r} is not a Flink duration (e.g. 500 ms, 5 s, 1 min)")
    return int(match.group(1)) * (_UNITS[match.group(2)] if match.group(2) else 0.001)


def _check_value(spec: SettingSpec, value: str) -> str:
    text = value.strip()
    if spec.kind == "duration":
        if duration_s(spec.key, text) <= 0:
            raise InvalidInput(f"{spec.key}: must be longer than 0, got {value!r}")
    elif spec.kind == "count":
        if not text.isdigit():
            raise InvalidInput(f"{spec.key}: {value!r} is not a whole number")
    elif spec.kind == "bool":
        if text.lower() not in {"true", "false"}:
            raise InvalidInput(f"{spec.key}: {value!r} is not true or false")
        text = text.lower()
    elif text not in spec.choices:
        raise InvalidInput(f"{spec.key}: {value!r} is not one of {', '.join(spec.choices)}")
    return text


def spec_for(key: str, version: Version) -> SettingSpec:
    """The catalog entry of `key` if the Flink at `version` knows it; else one line naming the key."""
    shown = f"{version[0]}.{version[1]}"
    spec = _BY_KEY.get(key)
    if spec is None:
        known = ", ".join(s.key for s in CATALOG if s.since <= version and (s.until is None or version < s.until))
        raise InvalidInput(f"unknown setting {key!r}: chronos applies only the recovery settings Flink {shown} "
                           f"knows ({known})")
    if version < spec.since:
        raise InvalidInput(f"Flink {shown} does not know the setting {key!r} (it came in {spec.since[0]}."
                           f"{spec.since[1]})")
    if spec.until is not None and version >= spec.until:
        renamed = f"; it is {spec.renamed_to!r} now" if spec.renamed_to else ""
        raise InvalidInput(f"Flink {shown} does not know the setting {key!r} (gone in {spec.until[0]}."
                           f"{spec.until[1]}{renamed})")
    return spec


@dataclass(frozen=True)
class FlinkSettings:
    """Checked `key: value` lines for one Flink version, in the order given (a later line for a key wins)."""

    version: Version
    values: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)

    def of_scope(self, scope: str) -> FlinkSettings:
        return FlinkSettings(self.version, tuple((k, v) for k, v in self.values if _BY_KEY[k].scope == scope))

    def merged(self, other: FlinkSettings) -> FlinkSettings:
        merged = {**self.as_dict(), **other.as_dict()}
        return FlinkSettings(self.version, tuple(merged.items()))

    def lines(self) -> list[str]:
        return [f"{key}: {value}" for key, value in self.values]


def check_settings(pairs: Iterable[tuple[str, str]], version: Version) -> FlinkSettings:
    checked: dict[str, str] = {}
    for key, value in pairs:
        checked[key.strip()] = _check_value(spec_for(key.strip(), version), value)
    return FlinkSettings(version, tuple(checked.items()))


def parse_assignments(texts: Iterable[str], version: Version) -> FlinkSettings:
    """`key=value` (or `key: value`) texts as the command line takes them."""
    pairs = []
    for text in texts:
        key, sep, value = text.partition("=") if "=" in text else text.partition(":")
        if not sep or not key.strip() or not value.strip():
            raise InvalidInput(f"expected key=value, got {text!r}")
        pairs.append((key, value))
    return check_settings(pairs, version)


def recovery_settings(config: Mapping[str, str], spare_taskmanagers: int = 0,
                      base: RecoverySettings | None = None) -> RecoverySettings:
    """What the phase model needs from a cluster's (and job's) config; what is not set keeps Flink's default."""
    s = base or RecoverySettings()
    if "heartbeat.interval" in config:
        s = replace(s, heartbeat_interval_s=duration_s("heartbeat.interval", config["heartbeat.interval"]))
    if "heartbeat.timeout" in config:
        s = replace(s, heartbeat_timeout_s=duration_s("heartbeat.timeout", config["heartbeat.timeout"]))
    if "heartbeat.rpc-failure-threshold" in config:
        s = replace(s, rpc_failure_threshold=int(config["heartbeat.rpc-failure-threshold"]))
    strategy = config.get("restart-strategy.type", config.get("restart-strategy", s.restart_strategy))
    s = replace(s, restart_strategy=strategy)
    delay_key = _DELAY_KEYS.get(strategy)
    if delay_key is not None and delay_key in config:
        s = replace(s, restart_delay_s=duration_s(delay_key, config[delay_key]))
    for key in ("execution.state-recovery.from-local", "state.backend.local-recovery"):
        if key in config:
            s = replace(s, local_recovery=config[key].strip().lower() == "true")
    redundant = int(config.get("slotmanager.redundant-taskmanager-num", "0") or 0)
    return replace(s, spare_slots=s.spare_slots or spare_taskmanagers > 0 or redundant > 0)


def _ms(seconds: float) -> str:
    return f"{round(seconds * 1000)} ms"


# The key of the wait before a restart, per restart strategy: a delay written under another strategy's key is
# silently ignored by Flink (the default with checkpointing, exponential-delay, reads only its initial backoff).
_DELAY_KEYS = {"fixed-delay": "restart-strategy.fixed-delay.delay",
               "exponential-delay": "restart-strategy.exponential-delay.initial-backoff",
               "exponentialdelay": "restart-strategy.exponential-delay.initial-backoff",
               "failure-rate": "restart-strategy.failure-rate.delay"}


def settings_config(settings: RecoverySettings, version: Version) -> FlinkSettings:
    """The Flink lines that put `settings` in force (spare capacity is the cluster's shape, not a line here): the
    restart delay under the key of the strategy in force, task-local recovery under this version's name."""
    lines = [
        ("heartbeat.interval", _ms(settings.heartbeat_interval_s)),
        ("heartbeat.timeout", _ms(settings.heartbeat_timeout_s)),
        ("heartbeat.rpc-failure-threshold", str(settings.rpc_failure_threshold)),
    ]
    delay_key = _DELAY_KEYS.get(settings.restart_strategy)
    if delay_key is not None:  # the strategy named too: the lines mean the same on a cluster set otherwise
        lines += [("restart-strategy.type", settings.restart_strategy), (delay_key, _ms(settings.restart_delay_s))]
    if settings.local_recovery:
        lines.append(("execution.state-recovery.from-local" if version >= (2, 0) else "state.backend.local-recovery",
                      "true"))
    return check_settings(lines, version)


def in_force(config: Mapping[str, str], spare_taskmanagers: int = 0) -> tuple[tuple[str, str], ...]:
    """The catalog's settings out of a cluster's whole configuration (as its JobManager read it: what is in force,
    ours and the cluster's own alike), plus the spare TaskManagers beside it, as stored with a recovery."""
    known = {spec.key for spec in CATALOG}
    spare = ((SPARE_KEY, str(spare_taskmanagers)),) if spare_taskmanagers else ()
    return tuple((k, str(v)) for k, v in sorted(config.items()) if k in known) + spare
