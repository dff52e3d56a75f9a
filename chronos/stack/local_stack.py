"""`chronos stack up | down | status`: the lifecycle of the whole local stack.

`up` is idempotent (a healthy stack is reported, not restarted), `down` stops every PID it knows
(gracefully, then forcefully) and is idempotent, and `status` probes each part for real, so a stack
with a dead process reads as degraded rather than healthy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from chronos.errors import ChronosError, StackError
from chronos.flink.distribution import find_distribution
from chronos.stack import flink_cluster, kafka_broker
from chronos.stack.artifacts import ensure_artifacts
from chronos.stack.helpers import live_helpers, stop_all_helpers
from chronos.stack.ports import free_port_block, free_ports, port_in_use
from chronos.stack.processes import is_alive, terminate
from chronos.stack.state import StackState, clear_state, load_state, save_state

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class StackOptions:
    stack_dir: Path
    cache_dir: Path
    slots: int = 4
    kafka_port: int = 0
    rest_port: int = 0
    # A broker to share instead of starting one ("host:port"): a profiling cluster runs beside the
    # live stack on its broker, so a fault in one cluster never touches the other's TaskManagers.
    shared_bootstrap: str | None = None


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    alive: bool
    ready: bool
    detail: str


@dataclass(frozen=True)
class StackStatus:
    health: str  # "healthy" | "degraded" | "stopped"
    state: StackState | None
    components: tuple[ComponentStatus, ...]
    helpers: tuple[tuple[str, int], ...]


def _check_port(port: int, what: str) -> None:
    if port and port_in_use(port):
        raise StackError(f"port {port} for {what} is already in use; pick another or omit it to choose a free one")


def up(options: StackOptions, report: Report = _quiet) -> tuple[StackState, bool]:
    """Start the stack, or return the running one. Returns (state, started_now)."""
    current = status(options.stack_dir)
    if current.health == "healthy" and current.state is not None:
        return current.state, False
    if current.state is not None:
        report("stopping what is left of a degraded stack")
        down(options.stack_dir)
    if options.slots < 1:
        raise StackError(f"slots must be at least 1, got {options.slots}")
    _check_port(options.kafka_port, "Kafka")
    _check_port(options.rest_port, "the Flink REST API")

    report("fetching Kafka and the Flink Kafka connector from Maven Central (cached)")
    artifacts = ensure_artifacts(options.cache_dir)
    dist = find_distribution()

    chosen = free_ports(4)
    kafka_host = "127.0.0.1"
    if options.shared_bootstrap:
        kafka_host, _, port = options.shared_bootstrap.partition(",")[0].rpartition(":")
        if not kafka_host or not port.isdigit():
            raise StackError(f"invalid Kafka bootstrap {options.shared_bootstrap!r}: expected host:port")
        kafka_port = int(port)
        kafka_broker.wait_ready(options.shared_bootstrap, None, timeout_s=10)
    else:
        kafka_port = options.kafka_port or chosen[0]
    rest_port = options.rest_port or chosen[2]
    controller_port, rpc_port = chosen[1], chosen[3]
    prom_base = free_port_block(4, avoid=frozenset({kafka_port, rest_port, controller_port, rpc_port}))
    stack_dir = options.stack_dir.resolve()
    stack_dir.mkdir(parents=True, exist_ok=True)
    started: list[int] = []
    kafka_pid: int | None = None
    try:
        if not options.shared_bootstrap:
            report(f"starting Kafka (KRaft) on 127.0.0.1:{kafka_port}")
            kafka_pid = kafka_broker.start_broker(artifacts.kafka_lib, stack_dir / "kafka", kafka_port, controller_port)
            started.append(kafka_pid)
        settings = flink_cluster.FlinkClusterSettings(
            home=stack_dir / "flink", rest_port=rest_port, rpc_port=rpc_port,
            prometheus_port_base=prom_base, slots=options.slots, extra_lib_jars=(artifacts.connector_jar,),
        )
        report(f"starting Flink {options.slots}-slot session cluster, REST on 127.0.0.1:{rest_port}")
        jm_pid, tm_pids = flink_cluster.start_cluster(dist, settings)
        started.extend([jm_pid, *tm_pids])
        report("waiting for Kafka to answer a metadata request")
        kafka_broker.wait_ready(f"{kafka_host}:{kafka_port}", kafka_pid)
        report("waiting for Flink to register every slot")
        rest_url = f"http://127.0.0.1:{rest_port}"
        flink_cluster.wait_ready(rest_url, options.slots, [jm_pid, *tm_pids])
    except BaseException:
        terminate(started, grace_seconds=10)
        raise
    state = StackState(
        stack_dir=str(stack_dir), started_at=time.time(), kafka_port=kafka_port,
        kafka_controller_port=controller_port, kafka_pid=kafka_pid, flink_rest_port=rest_port,
        flink_rpc_port=rpc_port, prometheus_port_base=prom_base, jobmanager_pid=jm_pid,
        taskmanager_pids=tuple(tm_pids), slots=options.slots, kafka_lib=str(artifacts.kafka_lib),
        connector_jar=str(artifacts.connector_jar), kafka_host=kafka_host,
    )
    save_state(state)
    return state, True


def down(stack_dir: Path, report: Report = _quiet) -> list[str]:
    """Stop helpers, then Flink, then Kafka. Returns the names of what was running."""
    stopped = stop_all_helpers(stack_dir)
    state = load_state(stack_dir)
    if state is None:
        return stopped
    named = state.pids()
    pid_dir = Path(state.stack_dir) / "flink" / "pid"
    extra = _pids_in(pid_dir)
    flink = [pid for name, pid in named.items() if name.startswith("flink")] + extra
    running = [name for name, pid in named.items() if is_alive(pid)]
    report("stopping Flink")
    terminate(sorted(set(flink)), grace_seconds=20)
    if state.kafka_pid is not None:
        report("stopping Kafka")
        terminate([state.kafka_pid], grace_seconds=30)
    for pid_file in pid_dir.glob("*.pid"):
        pid_file.unlink()
    clear_state(stack_dir)
    return stopped + running


def _pids_in(pid_dir: Path) -> list[int]:
    pids: list[int] = []
    for pid_file in pid_dir.glob("*.pid"):
        pids.extend(int(t) for t in pid_file.read_text().split() if t.isdigit())
    return pids


def _kafka_ready(state: StackState) -> tuple[bool, str]:
    try:
        kafka_broker.wait_ready(state.bootstrap, state.kafka_pid, timeout_s=5)
        return True, f"bootstrap {state.bootstrap}"
    except ChronosError as exc:
        return False, str(exc)


def _flink_ready(state: StackState) -> tuple[bool, str]:
    try:
        overview = httpx.get(f"{state.rest_url}/overview", timeout=3.0).json()
    except (httpx.HTTPError, ValueError) as exc:
        return False, f"{state.rest_url} does not answer ({type(exc).__name__})"
    slots = int(overview.get("slots-total", 0))
    ok = slots >= state.slots
    return ok, f"{state.rest_url}, {slots}/{state.slots} slots, {overview.get('jobs-running', 0)} running jobs"


def status(stack_dir: Path) -> StackStatus:
    state = load_state(stack_dir)
    helpers = tuple(live_helpers(stack_dir).items())
    if state is None:
        return StackStatus("stopped", None, (), helpers)
    kafka_alive = state.kafka_pid is None or is_alive(state.kafka_pid)
    kafka_ok, kafka_detail = _kafka_ready(state) if kafka_alive else (False, "process is gone")
    if state.kafka_pid is None:
        kafka_detail += " (shared, not this stack's)"
    flink_ok, flink_detail = _flink_ready(state)
    components = [ComponentStatus("kafka", state.kafka_pid or 0, kafka_alive, kafka_ok, kafka_detail)]
    jm_alive = is_alive(state.jobmanager_pid)
    components.append(ComponentStatus("flink-jobmanager", state.jobmanager_pid, jm_alive,
                                      jm_alive and flink_ok, flink_detail if jm_alive else "process is gone"))
    for index, pid in enumerate(state.taskmanager_pids):
        alive = is_alive(pid)
        components.append(ComponentStatus(f"flink-taskmanager-{index}", pid, alive, alive and flink_ok,
                                          "running" if alive else "process is gone"))
    health = "healthy" if all(c.alive and c.ready for c in components) else "degraded"
    return StackStatus(health, state, tuple(components), helpers)
