"""The one place where real adapters are built from the stack state and command-line overrides."""

from __future__ import annotations

import os
from pathlib import Path

from chronos.errors import StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import CliSubmitter, JobSubmitter, RestSubmitter
from chronos.stack.job_records import JobRecordStore
from chronos.stack.state import StackState, load_state


def default_stack_dir() -> Path:
    return Path(os.environ.get("CHRONOS_STACK_DIR") or Path.home() / ".chronos" / "stack")


def default_cache_dir() -> Path:
    return Path(os.environ.get("CHRONOS_CACHE_DIR") or Path.home() / ".cache" / "chronos")


def require_stack(stack_dir: Path) -> StackState:
    state = load_state(stack_dir)
    if state is None:
        raise StackError(f"no stack is running in {stack_dir}; start one with `chronos stack up`")
    return state


def rest_url(stack_dir: Path, override: str | None) -> str:
    return override if override else require_stack(stack_dir).rest_url


def bootstrap(stack_dir: Path, override: str | None) -> str:
    return override if override else require_stack(stack_dir).bootstrap


def flink_client(stack_dir: Path, override: str | None) -> FlinkRestClient:
    return FlinkRestClient(rest_url(stack_dir, override))


def submitter(path: str, client: FlinkRestClient, stack_dir: Path) -> JobSubmitter:
    dist = find_distribution()
    if path == "cli":
        state = require_stack(stack_dir)
        flink_home = Path(state.stack_dir) / "flink"
        return CliSubmitter(dist, client.base_url, flink_home / "conf", flink_home / "log", flink_home / "lib")
    return RestSubmitter(client, dist.python_jar)


def job_records(stack_dir: Path) -> JobRecordStore:
    return JobRecordStore(stack_dir / "jobs")


def savepoint_dir(stack_dir: Path) -> Path:
    return require_stack(stack_dir).savepoint_dir
