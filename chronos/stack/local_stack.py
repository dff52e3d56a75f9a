"""`chronos stack up | down | status`: the lifecycle of the whole local stack.

`up` is idempotent (a healthy stack is reported, not restarted), `down` stops every process it
started (gracefully, then forcefully) and is idempotent, and `status` probes each part for real, so a
stack with a dead process reads as degraded rather than healthy. A recorded PID that now holds another
process (a stale state file after a crash or a reboot) is said and never signalled.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from pydantic import ValidationError

from chronos import bounded_http
from chronos.connection_security import PLAINTEXT
from chronos.errors import ChronosError, InvalidInput, StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.replies import ClusterOverview
from chronos.flink.rest import tls_refusal
from chronos.stack import flink_cluster, kafka_broker, stack_credentials
from chronos.stack.artifacts import ensure_artifacts
from chronos.stack.helpers import live_helpers, stop_all_helpers
from chronos.stack.ports import free_port_block, free_ports, port_in_use
from chronos.stack.processes import Check, ProcessRecord, adopt, check, stop
from chronos.stack.service_account import account_of, remove_services_dir, service_account
from chronos.stack.stack_credentials import StackCredentials
from chronos.stack.state import STATE_FILE, StackState, UnreadableState, clear_state, load_state, save_state

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
    # Added to every JVM of the stack (Kafka, JobManager, TaskManagers) and of the profiling clusters started
    # beside it, e.g. "-XX:TieredStopAtLevel=1": C1-compiled code only, far less JIT work for short runs on a
    # small machine (the test suite's), at the price of peak throughput.
    jvm_opts: str = ""
    # Checked recovery settings (chronos.optimizer.recovery_config.FlinkSettings.values) laid over the cluster's
    # config, and TaskManagers kept idle beside the one the jobs need.
    flink_settings: tuple[tuple[str, str], ...] = ()
    spare_taskmanagers: int = 0
    # The OS priority (nice, 0-19) of the cluster's Flink processes and of what they start (Python UDF workers, a
    # replacement TaskManager): a profiling cluster runs below the live one, so on a shared host the copies take
    # what the live job leaves rather than what it needs.
    niceness: int = 0
    # Secured (`chronos stack up --secure`): the broker over TLS with SCRAM logins, Flink's REST over mutual TLS, with
    # credentials generated into the services' folder. `credentials`: another stack's to use instead (a profiling
    # cluster beside a secured live stack: its broker, its CA).
    secure: bool = False
    credentials: StackCredentials | None = None


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
    stale: tuple[str, ...] = ()  # one line per recorded PID that now holds another process (not touched)


@dataclass(frozen=True)
class DownReport:
    stopped: tuple[str, ...]  # what was running and is stopped now, by name
    stale: tuple[str, ...]  # one line per recorded PID that now holds another process (not touched)


def _check_port(port: int, what: str) -> None:
    if port and port_in_use(port):
        raise StackError(f"port {port} for {what} is already in use; pick another or omit it to choose a free one")


def up(options: StackOptions, report: Report = _quiet) -> tuple[StackState, bool]:
    """Start the stack, or return the running one. Returns (state, started_now)."""
    current = status(options.stack_dir)
    if current.health == "healthy" and current.state is not None:
        if options.secure and current.state.kafka_security is None:
            raise StackError(f"a plaintext stack runs in {options.stack_dir}; stop it (`chronos stack down`) to start "
                             "it secured")
        return current.state, False
    if (options.stack_dir / STATE_FILE).exists():
        report("stopping what is left of a degraded stack")
        down(options.stack_dir, report)
    if options.slots < 1:
        raise StackError(f"slots must be at least 1, got {options.slots}")
    if not 0 <= options.spare_taskmanagers <= 2:
        raise StackError(f"spare TaskManagers must be 0 to 2 (the reporter's port range), got {options.spare_taskmanagers}")
    _check_port(options.kafka_port, "Kafka")
    _check_port(options.rest_port, "the Flink REST API")

    account = service_account()
    report("fetching Kafka and the Flink Kafka connector from Maven Central (cached)")
    artifacts = ensure_artifacts(options.cache_dir)
    dist = find_distribution()
    account.require_readable(
        [Path(sys.executable), dist.home, artifacts.kafka_lib, artifacts.connector_jar],
        "install chronos (and its cache: CHRONOS_CACHE_DIR) where that user can read it")

    chosen = free_ports(4)
    kafka_host = "127.0.0.1"
    if options.shared_bootstrap:
        kafka_host, _, port = options.shared_bootstrap.partition(",")[0].rpartition(":")
        if not kafka_host or not port.isdigit():
            raise StackError(f"invalid Kafka bootstrap {options.shared_bootstrap!r}: expected host:port")
        kafka_port = int(port)
        kafka_broker.wait_ready(options.shared_bootstrap, None, timeout_s=10,
                                security=options.credentials.kafka_client() if options.credentials else PLAINTEXT)
    else:
        kafka_port = options.kafka_port or chosen[0]
    rest_port = options.rest_port or chosen[2]
    controller_port, rpc_port = chosen[1], chosen[3]
    prom_base = free_port_block(4, avoid=frozenset({kafka_port, rest_port, controller_port, rpc_port}))
    options.stack_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stack_dir = options.stack_dir.resolve()
    services = account.services_dir(stack_dir)
    new_services = not services.exists()
    account.prepare(services)
    if account.separate:
        report(f"services run as user {account.name!r} in {services}")
    started: list[ProcessRecord] = []
    kafka: ProcessRecord | None = None
    try:
        creds = options.credentials
        if creds is None and options.secure:
            report("generating the stack's CA, certificates and passwords")
            creds = stack_credentials.generate(services, account)
        kafka_security = None if creds is None else creds.kafka_client()
        rest_security = None if creds is None else creds.rest_client()
        if not options.shared_bootstrap:
            secured = " over TLS with SCRAM logins" if creds else ""
            report(f"starting Kafka (KRaft) on 127.0.0.1:{kafka_port}{secured}")
            kafka = kafka_broker.start_broker(artifacts.kafka_lib, services / "kafka", kafka_port, controller_port,
                                              account, jvm_opts=options.jvm_opts,
                                              credentials=None if options.credentials else creds)
            started.append(kafka)
        settings = flink_cluster.FlinkClusterSettings(
            home=services / "flink", rest_port=rest_port, rpc_port=rpc_port, prometheus_port_base=prom_base,
            account=account, slots=options.slots, extra_lib_jars=(artifacts.connector_jar,), jvm_opts=options.jvm_opts,
            extra_conf=options.flink_settings, taskmanagers=1 + options.spare_taskmanagers, niceness=options.niceness,
            rest_tls=() if creds is None else stack_credentials.flink_rest_settings(creds),
        )
        spare = f" and {options.spare_taskmanagers} spare TaskManager(s)" if options.spare_taskmanagers else ""
        tls = " (mutual TLS)" if creds else ""
        report(f"starting Flink {options.slots}-slot session cluster{spare}, REST on 127.0.0.1:{rest_port}{tls}")
        for line in (f"{key}: {value}" for key, value in options.flink_settings):
            report(f"  with {line}")
        jobmanager, taskmanagers = flink_cluster.start_cluster(dist, settings)
        started.extend([jobmanager, *taskmanagers])
        report("waiting for Kafka to answer a metadata request")
        kafka_broker.wait_ready(f"{kafka_host}:{kafka_port}", kafka, security=kafka_security or PLAINTEXT)
        report("waiting for Flink to register every slot")
        rest_url = f"{'https' if creds else 'http'}://127.0.0.1:{rest_port}"
        flink_cluster.wait_ready(rest_url, options.slots * (1 + options.spare_taskmanagers),
                                 [jobmanager, *taskmanagers], security=rest_security)
    except BaseException:
        # Also what Flink's pid files prove is ours: a start that failed between the script and the record.
        adopted = [found.record for _, found in _flink_daemons(services / "flink") if found.ours]
        stop([*started, *adopted], grace_seconds=10)
        if new_services:
            remove_services_dir(services, stack_dir)
        raise
    state = StackState(
        stack_dir=str(stack_dir), started_at=time.time(), kafka_port=kafka_port,
        kafka_controller_port=controller_port, kafka=kafka, flink_rest_port=rest_port,
        flink_rpc_port=rpc_port, prometheus_port_base=prom_base, jobmanager=jobmanager,
        taskmanagers=tuple(taskmanagers), slots=options.slots, kafka_lib=str(artifacts.kafka_lib),
        connector_jar=str(artifacts.connector_jar), services_dir=str(services),
        service_user=account.name if account.separate else None, kafka_host=kafka_host, jvm_opts=options.jvm_opts,
        flink_settings=options.flink_settings, spare_taskmanagers=options.spare_taskmanagers, niceness=options.niceness,
        kafka_security=kafka_security, rest_security=rest_security,
    )
    save_state(state)
    return state, True


def restart_flink(stack_dir: Path, flink_settings: tuple[tuple[str, str], ...], spare_taskmanagers: int,
                  report: Report = _quiet) -> StackState:
    """Stop the stack's Flink (JobManager and every TaskManager) and start it again on the same ports and
    directories with these settings; Kafka and the helpers go on. Jobs do not survive it (a session cluster
    without HA forgets them): stop them with savepoints first (chronos.tune.cluster_reconfigure does)."""
    state = load_state(stack_dir)
    if state is None:
        raise StackError(f"no stack in {stack_dir}; start one with `chronos stack up`")
    if not 0 <= spare_taskmanagers <= 2:
        raise StackError(f"spare TaskManagers must be 0 to 2 (the reporter's port range), got {spare_taskmanagers}")
    flink_home = state.flink_home
    named = {name: record for name, record in state.processes().items() if name.startswith("flink")}
    for name, found in _flink_daemons(flink_home):
        if found.ours and found.record.pid not in {r.pid for r in named.values()}:
            named[name + f" (pid {found.record.pid})"] = found.record
    stale: list[str] = []
    report("stopping Flink")
    _stop_named(named, 20, report, stale)
    _remove_pid_files(flink_home)  # Flink's scripts append to them: a dead PID read back would be taken for the new one
    settings = flink_cluster.FlinkClusterSettings(
        home=flink_home, rest_port=state.flink_rest_port, rpc_port=state.flink_rpc_port,
        prometheus_port_base=state.prometheus_port_base, account=account_of(Path(state.services_dir)),
        slots=state.slots, extra_lib_jars=(Path(state.connector_jar),), jvm_opts=state.jvm_opts,
        extra_conf=flink_settings, taskmanagers=1 + spare_taskmanagers, niceness=state.niceness,
        rest_tls=_rest_tls_of(state))
    spare = f" and {spare_taskmanagers} spare TaskManager(s)" if spare_taskmanagers else ""
    report(f"starting Flink again{spare}" + "".join(f"\n  with {k}: {v}" for k, v in flink_settings))
    jobmanager, taskmanagers = flink_cluster.start_cluster(find_distribution(), settings)
    new = state.model_copy(update={"jobmanager": jobmanager, "taskmanagers": tuple(taskmanagers),
                                   "flink_settings": flink_settings, "spare_taskmanagers": spare_taskmanagers})
    save_state(new)  # before waiting: a start that never gets ready is still this stack's to stop
    report("waiting for Flink to register every slot")
    flink_cluster.wait_ready(state.rest_url, new.slots_total, [jobmanager, *taskmanagers], security=state.rest_security)
    return new


def _rest_tls_of(state: StackState) -> tuple[tuple[str, str], ...]:
    """A secured stack's Flink REST settings, again (from the credentials its state names)."""
    if state.rest_security is None or state.rest_security.ca_file is None:
        return ()
    return stack_credentials.flink_rest_settings(stack_credentials.StackCredentials(Path(state.rest_security.ca_file).parent))


def down(stack_dir: Path, report: Report = _quiet, purge: bool = False) -> DownReport:
    """Stop helpers, then Flink, then Kafka: every process the stack started and every Flink daemon its
    own pid files prove to be this stack's (e.g. a JobManager restarted by hand with the stack's config).
    Stale entries are said through `report`, never signalled. `purge` also deletes the services' files
    (topics, checkpoints, logs) where they live apart from the stack directory."""
    helpers = stop_all_helpers(stack_dir, report)
    stale: list[str] = list(helpers.stale)
    stack_dir = stack_dir.resolve() if stack_dir.exists() else stack_dir
    try:
        state = load_state(stack_dir)
    except UnreadableState as exc:
        stale.append(str(exc))
        report(str(exc))
        state = None
    services = Path(state.services_dir) if state is not None else _services_guess(stack_dir)  # validated by load_state
    flink_home = services / "flink"
    named = state.processes() if state is not None else {}
    flink = {name: record for name, record in named.items() if name.startswith("flink")}
    recorded = {record.pid for record in named.values()}
    for name, found in _flink_daemons(flink_home):
        if found.record.pid in recorded:
            continue
        if found.ours:
            flink[f"{name} (pid {found.record.pid}, from Flink's pid file)"] = found.record
        elif found.verdict == "stale":
            stale.append(found.stale_line())
            report(found.stale_line())
    for name, record in list(flink.items()):
        if record.role.endswith("TaskManager"):
            flink.update({f"{name}'s Python worker (pid {w.pid})": w for w in flink_cluster.python_workers_of(record)})
    report("stopping Flink")
    stopped = _stop_named(flink, 20, report, stale)
    if state is not None and state.kafka is not None:
        report("stopping Kafka")
        stopped += _stop_named({"kafka": state.kafka}, 30, report, stale)
    _remove_pid_files(flink_home)
    if not clear_state(stack_dir):
        stale.append(f"the stack directory {stack_dir} is not chronos's user's own: its state file is left there")
    if purge:
        remove_services_dir(services, stack_dir)
    return DownReport(tuple(helpers.stopped) + tuple(stopped), tuple(stale))


def _remove_pid_files(flink_home: Path) -> None:
    """Flink's pid files of a services directory that is this stack's (computed, never read from a file), removed
    through the no-follow walk (chronos.stack.service_tree): a link in the way removes nothing it names."""
    pid_dir = flink_home / "pid"
    try:
        tree = account_of(flink_home.parent).tree(flink_home.parent)
    except StackError:
        return
    for name in tree.names(pid_dir):
        if name.endswith(".pid"):
            tree.remove(pid_dir / name)


def _services_guess(stack_dir: Path) -> Path:
    """Where the services of a stack whose state is lost would keep their files."""
    try:
        return service_account().services_dir(stack_dir)
    except StackError:
        return stack_dir


def _stop_named(named: dict[str, ProcessRecord], grace_s: float, report: Report, stale: list[str]) -> list[str]:
    result = stop(named.values(), grace_seconds=grace_s, report=report)
    stale.extend(result.stale)
    gone = {record.pid for record in result.stopped}
    return [name for name, record in named.items() if record.pid in gone]


def _flink_daemons(flink_home: Path) -> list[tuple[str, Check]]:
    """Every PID in Flink's own pid files under the stack, judged by who runs it (the user that owns the
    services' directory: those files are that user's to write), what it was started as (the daemon's entry
    class and this stack's config dir) and by starting before its pid file was written."""
    conf, pid_dir = flink_home / "conf", flink_home / "pid"
    try:
        services = os.lstat(flink_home.parent)
    except OSError:
        return []
    if not stat.S_ISDIR(services.st_mode):  # a link in its place: no pid in it is anyone's
        return []
    services_user = services.st_uid
    kinds = (("flink-jobmanager", "this stack's JobManager", flink_cluster.JOBMANAGER_DAEMON,
              flink_cluster.jobmanager_marks(conf)),
             ("flink-taskmanager", "this stack's TaskManager", flink_cluster.TASKMANAGER_DAEMON,
              flink_cluster.taskmanager_marks(conf)))
    found: list[tuple[str, Check]] = []
    for name, role, daemon, marks in kinds:
        for pid_file in flink_cluster.pid_files(pid_dir, daemon):
            try:
                written = os.lstat(pid_file).st_mtime
            except OSError:
                continue
            found.extend((name, adopt(pid, role, marks, written, services_user))
                         for pid in flink_cluster.read_pids(pid_file))
    return found


def _kafka_ready(state: StackState) -> tuple[bool, str]:
    try:
        kafka_broker.wait_ready(state.bootstrap, state.kafka, timeout_s=5, security=state.kafka_client)
        return True, f"bootstrap {state.bootstrap}"
    except ChronosError as exc:
        return False, str(exc)


def _flink_ready(state: StackState) -> tuple[bool, str]:
    try:
        overview = ClusterOverview.model_validate(
            bounded_http.get(f"{state.rest_url}/overview", 3.0, state.rest_security).json("/overview"))
    except (httpx.HTTPError, ValidationError) as exc:
        refusal = tls_refusal(state.rest_url, state.rest_client, exc)
        return False, refusal or f"{state.rest_url} does not answer as Flink does ({type(exc).__name__})"
    except InvalidInput as exc:  # the credentials' files are gone or unreadable
        return False, str(exc)
    ok = overview.slots_total >= state.slots_total
    return ok, (f"{state.rest_url}, {overview.slots_total}/{state.slots_total} slots, {overview.jobs_running} "
                "running jobs")


def _not_running(found: Check) -> str:
    return found.stale_line() if found.verdict == "stale" else "process is gone"


def status(stack_dir: Path) -> StackStatus:
    helpers = live_helpers(stack_dir)
    stale = list(helpers.stale)
    try:
        state = load_state(stack_dir)
    except UnreadableState as exc:
        return StackStatus("stopped", None, (), tuple(helpers.running.items()), (*stale, str(exc)))
    if state is None:
        return StackStatus("stopped", None, (), tuple(helpers.running.items()), tuple(stale))
    checks = {name: check(record) for name, record in state.processes().items()}
    stale += [found.stale_line() for found in checks.values() if found.verdict == "stale"]
    kafka_check = checks.get("kafka")
    kafka_alive = kafka_check is None or kafka_check.ours
    if kafka_alive:
        kafka_ok, kafka_detail = _kafka_ready(state)
    else:
        assert kafka_check is not None
        kafka_ok, kafka_detail = False, _not_running(kafka_check)
    if state.kafka is None:
        kafka_detail += " (shared, not this stack's)"
    jm = checks["flink-jobmanager"]
    flink_ok, flink_detail = _flink_ready(state) if jm.ours else (False, "")
    components = [ComponentStatus("kafka", state.kafka_pid or 0, kafka_alive, kafka_ok, kafka_detail)]
    components.append(ComponentStatus("flink-jobmanager", jm.record.pid, jm.ours, jm.ours and flink_ok,
                                      flink_detail if jm.ours else _not_running(jm)))
    for index, record in enumerate(state.taskmanagers):
        tm = checks[f"flink-taskmanager-{index}"]
        components.append(ComponentStatus(f"flink-taskmanager-{index}", record.pid, tm.ours, tm.ours and flink_ok,
                                          "running" if tm.ours else _not_running(tm)))
    if all(c.alive and c.ready for c in components):
        health = "healthy"
    elif not any(found.ours for found in checks.values()):
        health = "stopped"  # nothing this stack started runs any more (a stale or dead state file)
    else:
        health = "degraded"
    return StackStatus(health, state, tuple(components), tuple(helpers.running.items()), tuple(stale))
