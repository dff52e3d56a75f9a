"""The stack's state file: every port, PID and directory `status` and `down` need, in one place."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

STATE_FILE = "stack.json"


class StackState(BaseModel):
    model_config = ConfigDict(frozen=True)

    stack_dir: str
    started_at: float
    kafka_port: int
    kafka_controller_port: int
    kafka_pid: int | None  # None: the broker is another stack's (a profiling cluster shares the live one)
    flink_rest_port: int
    flink_rpc_port: int
    prometheus_port_base: int
    jobmanager_pid: int
    taskmanager_pids: tuple[int, ...]
    slots: int
    kafka_lib: str
    connector_jar: str
    kafka_host: str = "127.0.0.1"

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
    def savepoint_dir(self) -> Path:
        return Path(self.stack_dir) / "flink" / "savepoints"

    def pids(self) -> dict[str, int]:
        named = {"flink-jobmanager": self.jobmanager_pid}
        if self.kafka_pid is not None:
            named = {"kafka": self.kafka_pid, **named}
        for index, pid in enumerate(self.taskmanager_pids):
            named[f"flink-taskmanager-{index}"] = pid
        return named


def load_state(stack_dir: Path) -> StackState | None:
    path = stack_dir / STATE_FILE
    if not path.exists():
        return None
    return StackState.model_validate(json.loads(path.read_text()))


def save_state(state: StackState) -> None:
    path = Path(state.stack_dir) / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2))
    os.replace(tmp, path)


def clear_state(stack_dir: Path) -> None:
    (stack_dir / STATE_FILE).unlink(missing_ok=True)
