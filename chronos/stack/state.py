"""The stack's state file: every port, process and directory `status` and `down` need, in one place.

Processes are kept as `ProcessRecord`s (PID, kernel start time, what they were started as), never as
bare PIDs: the file outlives the processes (a crash, a reboot) and its PIDs may name anything later.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from chronos.errors import StackError
from chronos.stack.processes import ProcessRecord, check

STATE_FILE = "stack.json"

# What the stack's processes were started as (exact argv elements), besides their start time.
KAFKA_MAIN = "kafka.Kafka"
JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"


def flink_conf_mark(conf_dir: Path) -> str:
    """The argv element by which Flink's daemon script names the config dir it started a process with."""
    return f"-Dlog4j.configurationFile=file:{conf_dir}/log4j.properties"


class UnreadableState(StackError):
    """A state file that is not one this chronos wrote: none of its PIDs can be trusted."""


class StackState(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    stack_dir: str
    started_at: float
    kafka_port: int
    kafka_controller_port: int
    kafka: ProcessRecord | None  # None: the broker is another stack's (a profiling cluster shares the live one)
    flink_rest_port: int
    flink_rpc_port: int
    prometheus_port_base: int
    jobmanager: ProcessRecord
    taskmanagers: tuple[ProcessRecord, ...]
    slots: int
    kafka_lib: str
    connector_jar: str
    services_dir: str  # where Kafka, Flink and Prometheus keep their files: the stack dir, or (as root) the service user's
    service_user: str | None  # None: the services run as chronos's own user
    kafka_host: str = "127.0.0.1"
    jvm_opts: str = ""  # what every JVM of the stack was started with beyond the defaults
    # The recovery settings the cluster was started with beyond ours (`chronos stack up/reconfigure --set`),
    # and the TaskManagers kept idle beside the one the jobs need (a restart lands on them at once).
    flink_settings: tuple[tuple[str, str], ...] = ()
    spare_taskmanagers: int = 0

    @property
    def slots_total(self) -> int:
        return self.slots * (1 + self.spare_taskmanagers)

    @property
    def stack_dir_path(self) -> Path:
        return Path(self.stack_dir)

    @property
    def bootstrap(self) -> str:
        return f"{self.kafka_host}:{self.kafka_port}"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.flink_rest_port}"

    @property
    def prometheus_urls(self) -> list[str]:
        """Every port of the reporter range: the JobManager, the TaskManagers and their replacements."""
        return [f"http://127.0.0.1:{p}/metrics" for p in range(self.prometheus_port_base, self.prometheus_port_base + 4)]

    @property
    def flink_home(self) -> Path:
        return Path(self.services_dir) / "flink"

    @property
    def kafka_home(self) -> Path:
        return Path(self.services_dir) / "kafka"

    @property
    def savepoint_dir(self) -> Path:
        return self.flink_home / "savepoints"

    @property
    def flink_conf_dir(self) -> Path:
        return self.flink_home / "conf"

    @property
    def kafka_pid(self) -> int | None:
        return self.kafka.pid if self.kafka is not None else None

    @property
    def jobmanager_pid(self) -> int:
        return self.jobmanager.pid

    @property
    def taskmanager_pids(self) -> tuple[int, ...]:
        return tuple(record.pid for record in self.taskmanagers)

    def processes(self) -> dict[str, ProcessRecord]:
        """This stack's own processes by name (a shared broker is not among them)."""
        named: dict[str, ProcessRecord] = {}
        if self.kafka is not None:
            named["kafka"] = self.kafka
        named["flink-jobmanager"] = self.jobmanager
        for index, record in enumerate(self.taskmanagers):
            named[f"flink-taskmanager-{index}"] = record
        return named

    def any_running(self) -> bool:
        """True if at least one recorded process is still the one this stack started."""
        return any(check(record).ours for record in self.processes().values())


def load_state(stack_dir: Path) -> StackState | None:
    """The state file, or None if there is none. A file that cannot be read as one is refused in one
    line (`UnreadableState`): its PIDs are not to be acted on."""
    path = stack_dir / STATE_FILE
    if not path.exists():
        return None
    try:
        return StackState.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError) as exc:
        reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        if isinstance(exc, ValidationError):
            reason = f"{exc.error_count()} field(s) not as chronos writes them, e.g. {exc.errors()[0]['loc']}"
        raise UnreadableState(f"the stack state {path} cannot be read ({reason}); its processes are not "
                              "touched; `chronos stack down` removes it") from exc


def save_state(state: StackState) -> None:
    """Written private to chronos's user (0600), atomically."""
    path = Path(state.stack_dir) / STATE_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(state.model_dump_json(indent=2))
    os.replace(tmp, path)


def clear_state(stack_dir: Path) -> None:
    (stack_dir / STATE_FILE).unlink(missing_ok=True)
