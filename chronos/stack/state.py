"""The stack's state file: every port, process and directory `status` and `down` need, in one place.

Processes are kept as `ProcessRecord`s (PID, kernel start time, what they were started as), never as
bare PIDs: the file outlives the processes (a crash, a reboot) and its PIDs may name anything later.

The file is believed only if it is still chronos's own (owned by the user chronos runs as, writable by
nobody else, in a folder the same holds for: chronos.input_files.require_private), if it describes the
folder it was read from, and if its services directory is the one that folder's stack has
(chronos.stack.service_account.services_dir_for): a crafted file once made root's `stack down` delete a pid
file in a folder it named, and kill a stranger it named.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chronos.connection_security import NO_REST_SECURITY, PLAINTEXT, KafkaSecurity, RestSecurity
from chronos.errors import InvalidInput, StackError, field_error
from chronos.input_files import UntrustedFile, read_own_json, write_private
from chronos.stack.processes import ProcessRecord, check
from chronos.stack.service_account import services_dir_for

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


Port = Annotated[int, Field(ge=1, le=65535)]


class StackState(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    stack_dir: str
    started_at: float
    kafka_port: Port
    kafka_controller_port: Port
    kafka: ProcessRecord | None  # None: the broker is another stack's (a profiling cluster shares the live one)
    flink_rest_port: Port
    flink_rpc_port: Port
    prometheus_port_base: Annotated[int, Field(ge=1, le=65532)]
    jobmanager: ProcessRecord
    taskmanagers: tuple[ProcessRecord, ...] = Field(max_length=8)
    slots: int = Field(ge=1, le=1024)
    kafka_lib: str
    connector_jar: str
    services_dir: str  # where Kafka, Flink and Prometheus keep their files: the stack dir, or (as root) the service user's
    service_user: str | None  # None: the services run as chronos's own user
    kafka_host: str = "127.0.0.1"
    jvm_opts: str = ""  # what every JVM of the stack was started with beyond the defaults
    # The recovery settings the cluster was started with beyond ours (`chronos stack up/reconfigure --set`),
    # and the TaskManagers kept idle beside the one the jobs need (a restart lands on them at once).
    flink_settings: tuple[tuple[str, str], ...] = ()
    spare_taskmanagers: int = Field(default=0, ge=0, le=2)
    niceness: int = Field(default=0, ge=0, le=19)  # its Flink processes' OS priority (StackOptions.niceness)
    # A secured stack's (`chronos stack up --secure`): how chronos's clients reach its broker and its Flink REST API
    # (references to the credentials' files only: chronos.stack.stack_credentials). None: plaintext, anonymous.
    kafka_security: KafkaSecurity | None = None
    rest_security: RestSecurity | None = None

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
        scheme = "https" if self.rest_security is not None else "http"
        return f"{scheme}://127.0.0.1:{self.flink_rest_port}"

    @property
    def kafka_client(self) -> KafkaSecurity:
        """How a client of this stack's broker connects (PLAINTEXT unless the stack is secured)."""
        return self.kafka_security or PLAINTEXT

    @property
    def rest_client(self) -> RestSecurity:
        return self.rest_security or NO_REST_SECURITY

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
    """The state file, or None if there is none. A file that cannot be read as one, or cannot be trusted, is
    refused in one line (`UnreadableState`): its PIDs are not to be acted on."""
    path = stack_dir / STATE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        state = StackState.model_validate(read_own_json(path, "the stack state"))
    except UntrustedFile as exc:
        raise UnreadableState(f"{exc}; its processes are not touched; `chronos stack down` removes it") from None
    except InvalidInput as exc:
        raise UnreadableState(f"the stack state {path} cannot be read ({str(exc).removeprefix(f'the stack state {path} ')}); "
                              "its processes are not touched; `chronos stack down` removes it") from None
    except ValidationError as exc:
        raise UnreadableState(f"the stack state {path} cannot be read ({field_error(exc.errors())}, not as chronos "
                              "writes it); its processes are not touched; `chronos stack down` removes it") from None
    here = stack_dir.resolve()
    if Path(state.stack_dir).resolve() != here:
        raise UnreadableState(f"the stack state {path} describes the stack in {state.stack_dir[:200]!r}, not this one; "
                              "its processes are not touched; `chronos stack down` removes it")
    expected = services_dir_for(here, separate=state.service_user is not None)
    if Path(state.services_dir) != expected:
        raise UnreadableState(f"the stack state {path} puts the services in {state.services_dir[:200]!r}, where this "
                              f"stack's never are ({expected}); its processes are not touched; `chronos stack down` "
                              "removes it")
    return state


def save_state(state: StackState) -> None:
    """Written private to chronos's user (0600), atomically."""
    write_private(Path(state.stack_dir) / STATE_FILE, state.model_dump_json(indent=2))


def clear_state(stack_dir: Path) -> bool:
    """Remove the state file (whatever it holds) from a stack directory that is chronos's user's own; a folder
    of anyone else's is left as it is (False)."""
    try:
        if stack_dir.stat().st_uid != os.geteuid():
            return False
    except OSError:
        return False
    (stack_dir / STATE_FILE).unlink(missing_ok=True)
    return True
