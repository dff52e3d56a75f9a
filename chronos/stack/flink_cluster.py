"""A standalone Flink session cluster started from the wheel's distribution with our own config."""

from __future__ import annotations

import copy
import fnmatch
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml
from pydantic import ValidationError

from chronos import bounded_http
from chronos.connection_security import RestSecurity
from chronos.errors import StackError
from chronos.flink.distribution import FlinkDistribution, script_env
from chronos.flink.replies import ClusterOverview
from chronos.stack.processes import EXEC_WAIT_S, PID_MAX, ProcessRecord, descendants, identify, running
from chronos.stack.service_account import ServiceAccount, account_of
from chronos.stack.service_tree import ServiceTree
from chronos.stack.state import JOBMANAGER_MAIN, TASKMANAGER_MAIN, flink_conf_mark


@dataclass(frozen=True)
class FlinkClusterSettings:
    home: Path
    rest_port: int
    rpc_port: int
    prometheus_port_base: int
    account: ServiceAccount
    slots: int = 4
    jobmanager_memory: str = "1g"
    taskmanager_memory: str = "1536m"
    python_executable: str = sys.executable
    extra_lib_jars: tuple[Path, ...] = ()
    jvm_opts: str = ""  # added to every JVM of the cluster (StackOptions.jvm_opts)
    # Checked `key: value` Flink settings laid over ours (chronos.optimizer.recovery_config: the recovery settings).
    extra_conf: tuple[tuple[str, str], ...] = ()
    taskmanagers: int = 1  # one the jobs need, and any spare ones kept idle for a restart to land on at once
    niceness: int = 0  # the daemons' OS priority: they inherit it from the script that starts them
    rest_tls: tuple[tuple[str, str], ...] = ()  # a secured stack's (chronos.stack.stack_credentials.flink_rest_settings)

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def lib_dir(self) -> Path:
        return self.home / "lib"

    @property
    def log_dir(self) -> Path:
        return self.home / "log"

    @property
    def pid_dir(self) -> Path:
        return self.home / "pid"

    @property
    def tmp_dir(self) -> Path:
        return self.home / "tmp"

    @property
    def checkpoint_dir(self) -> Path:
        return self.home / "checkpoints"

    @property
    def savepoint_dir(self) -> Path:
        return self.home / "savepoints"


def _deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def render_config(base: dict[str, Any], s: FlinkClusterSettings) -> dict[str, Any]:
    """The wheel's config.yaml (kept for its JVM --add-opens flags) overlaid with a loopback-only,
    stack-local cluster. Pure, so the rendering is unit-tested without starting anything."""
    prom_range = f"{s.prometheus_port_base}-{s.prometheus_port_base + 3}"
    java_opts = str(base.get("env", {}).get("java", {}).get("opts", {}).get("all", ""))
    overlay: dict[str, Any] = {
        # Temp files (PyFlink's copies of submitted programs, spill files, the netty shuffle) inside the
        # cluster's own directory: /tmp may hold another user's `pyflink` directory, and a test run
        # should not leave hundreds of MB there.
        "env": {"java": {"opts": {"all": " ".join(o for o in (java_opts, s.jvm_opts, f"-Djava.io.tmpdir={s.tmp_dir}")
                                                   if o.strip())}}},
        "io": {"tmp": {"dirs": str(s.tmp_dir)}},
        "jobmanager": {
            "bind-host": "127.0.0.1",
            "rpc": {"address": "127.0.0.1", "port": s.rpc_port},
            "memory": {"process": {"size": s.jobmanager_memory}},
        },
        "taskmanager": {
            "bind-host": "127.0.0.1",
            "host": "127.0.0.1",
            "numberOfTaskSlots": s.slots,
            "memory": {"process": {"size": s.taskmanager_memory}},
        },
        "rest": {"address": "127.0.0.1", "bind-address": "127.0.0.1", "port": s.rest_port},
        "blob": {"server": {"port": "0"}},
        # The REST job-detail cache lives this long (default 3 s): a restarted job read as not yet
        # RUNNING for up to 3 s after it was, which would be counted as retune downtime.
        "web": {"upload": {"dir": str(s.home / "web-upload")}, "refresh-interval": "250 ms"},
        "parallelism": {"default": 1},
        "execution": {
            "checkpointing": {
                "dir": f"file://{s.checkpoint_dir}",
                "savepoint-dir": f"file://{s.savepoint_dir}",
                "externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            }
        },
        "restart-strategy": {
            "type": "fixed-delay",
            "fixed-delay": {"attempts": 1000, "delay": "2 s"},
        },
        "python": {"executable": s.python_executable, "client": {"executable": s.python_executable}},
        # The Prometheus reporter binds all interfaces (it has no host option): keep this machine's
        # firewall closed to the range, or run the stack only where that is acceptable.
        "metrics": {
            # REST metric values are only as fresh as this fetch (default 10 s).
            "fetcher": {"update-interval": 2000},
            "reporter": {
                "prom": {
                    "factory": {"class": "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"},
                    "port": prom_range,
                }
            }
        },
    }
    return _deep_merge(_deep_merge(_deep_merge(base, overlay), _nested(s.extra_conf)), _nested(s.rest_tls))


def _nested(pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """`a.b.c: v` as {a: {b: {c: v}}}, so a setting merges into the same nesting as ours (a flat key beside a
    nested one would be two values for one key, and which one Flink reads is not ours to guess)."""
    tree: dict[str, Any] = {}
    for key, value in pairs:
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def write_conf_dir(dist: FlinkDistribution, s: FlinkClusterSettings) -> Path:
    tree = s.account.tree(s.home.parent)  # the services directory: written without following a link in it
    tree.directory(s.conf_dir)
    for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties",
                 "log4j-session.properties", "logback.xml"):
        source = dist.conf / name
        if source.exists():
            tree.write(s.conf_dir / name, source.read_bytes(), 0o644)
    base = yaml.safe_load((dist.conf / "config.yaml").read_text()) or {}
    rendered = render_config(base, s)
    tree.write(s.conf_dir / "config.yaml", yaml.safe_dump(rendered, sort_keys=False))
    for directory in (s.log_dir, s.pid_dir, s.checkpoint_dir, s.savepoint_dir, s.home / "web-upload", s.tmp_dir):
        tree.directory(directory)
    return s.conf_dir


def write_lib_dir(dist: FlinkDistribution, s: FlinkClusterSettings) -> Path:
    """The wheel's lib/ plus the connectors, as symlinks: connector classes then load once, in the
    cluster's own classloader, instead of being shipped and loaded cold with every (re)submission
    through pipeline.jars; that is most of what a retune's restart costs besides planning."""
    tree = s.account.tree(s.home.parent)
    tree.remove(s.lib_dir)
    tree.directory(s.lib_dir)
    for jar in [*sorted((dist.home / "lib").glob("*.jar")), *s.extra_lib_jars]:
        tree.link(s.lib_dir / jar.name, jar.resolve())
    return s.lib_dir


def prepare_home(dist: FlinkDistribution, s: FlinkClusterSettings) -> None:
    """Config, lib and working directories, the account's the cluster runs as (each made so as it is written)."""
    write_conf_dir(dist, s)
    write_lib_dir(dist, s)


def niced(niceness: int) -> list[str]:
    """The prefix that starts a command at a lower OS priority (coreutils' nice; a no-op at 0). Not preexec_fn:
    it is not safe in a process with threads, and a profile starts clusters from several."""
    if not 0 <= niceness <= 19:
        raise StackError(f"niceness must be 0 to 19, got {niceness}")
    return ["nice", "-n", str(niceness)] if niceness else []


def _run_script(dist: FlinkDistribution, s: FlinkClusterSettings, script: str, *args: str) -> None:
    env = script_env(s.conf_dir, s.log_dir, s.pid_dir, s.lib_dir, s.account.run_as())
    done = subprocess.run(
        [*niced(s.niceness), "bash", str(dist.bin / script), *args], env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=SCRIPT_TIMEOUT_S, **s.account.popen_kwargs(),
    )
    if done.returncode != 0:
        raise StackError(f"{script} {' '.join(args)} failed: {(done.stderr or done.stdout).strip()[-300:]}")


PYTHON_WORKER_MAIN = "pyflink.fn_execution.beam.beam_boot"


def python_workers_of(taskmanager: ProcessRecord) -> list[ProcessRecord]:
    """The Python UDF workers (pyflink's Beam worker processes) a TaskManager launched. They are its children
    only while it lives: a TaskManager stopped or killed leaves them behind, reparented to init and idle, for as
    long as the machine runs (found after a capacity bench and a profile of a Python-UDF job: ~175 MB each). Whoever
    ends a TaskManager collects them first and ends them with it."""
    return descendants(taskmanager, PYTHON_WORKER_MAIN, "a Python UDF worker of this stack")


SCRIPT_TIMEOUT_S = 120.0  # jobmanager.sh / taskmanager.sh return after ~6 s; never wait forever on one
JOBMANAGER_DAEMON = "standalonesession"
TASKMANAGER_DAEMON = "taskexecutor"


def pid_files(pid_dir: Path, daemon: str) -> list[Path]:
    """Flink's own pid files of one kind of daemon (its script appends a line per process it starts)."""
    try:
        names = _tree_of(pid_dir).names(pid_dir)
    except StackError:  # a services directory that is not what chronos made: no pid in it is read
        return []
    return [pid_dir / name for name in names if fnmatch.fnmatchcase(name, f"flink-*-{daemon}.pid")]


def read_pids(pid_file: Path) -> list[int]:
    """The PIDs in a pid file Flink's script wrote (the service user can write it too: whatever else it holds,
    a non-ASCII digit like '²', a negative number, is skipped, and a PID read is only ever adopted with proof). Read
    without following a link (chronos.stack.service_tree): as root, never a file the service user points at."""
    try:
        data = _tree_of(pid_file.parent).read(pid_file)
    except StackError:
        return []
    if data is None:
        return []
    text = data.decode("ascii", errors="replace")
    pids = (int(word) for word in text.split() if word.isascii() and word.isdigit() and len(word) <= 7)
    return [pid for pid in pids if 1 < pid <= PID_MAX]


def _tree_of(pid_dir: Path) -> ServiceTree:
    """The services directory a Flink home's pid directory (<services>/flink/pid) lies in, to read it no-follow."""
    services = pid_dir.parent.parent
    return account_of(services).tree(services)


def _read_pids(pid_dir: Path, daemon: str) -> list[int]:
    return [pid for pid_file in pid_files(pid_dir, daemon) for pid in read_pids(pid_file)]


def jobmanager_marks(conf_dir: Path) -> tuple[str, str]:
    return JOBMANAGER_MAIN, flink_conf_mark(conf_dir)


def taskmanager_marks(conf_dir: Path) -> tuple[str, str]:
    return TASKMANAGER_MAIN, flink_conf_mark(conf_dir)


def start_cluster(dist: FlinkDistribution, s: FlinkClusterSettings) -> tuple[ProcessRecord, list[ProcessRecord]]:
    """Start one JobManager and `s.taskmanagers` TaskManagers; return their records (JobManager, TaskManagers)."""
    prepare_home(dist, s)
    _run_script(dist, s, "jobmanager.sh", "start")
    for _ in range(s.taskmanagers):
        _run_script(dist, s, "taskmanager.sh", "start")
    jm = _read_pids(s.pid_dir, JOBMANAGER_DAEMON)
    tms = _read_pids(s.pid_dir, TASKMANAGER_DAEMON)
    if not jm or not tms:
        raise StackError(f"Flink started but wrote no PID files in {s.pid_dir}")
    jobmanager = identify(jm[-1], "this stack's JobManager", jobmanager_marks(s.conf_dir), EXEC_WAIT_S)
    return jobmanager, [identify(pid, "this stack's TaskManager", taskmanager_marks(s.conf_dir), EXEC_WAIT_S)
                        for pid in tms]


def wait_ready(rest_url: str, slots: int, processes: list[ProcessRecord], timeout_s: float = 90.0,
               security: RestSecurity | None = None) -> None:
    """Ready means /overview reports every expected slot, not that the scripts returned."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        dead = [record for record in processes if not running(record)]
        if dead:
            raise StackError(f"a Flink process (pid {dead[0].pid}) exited during start; see its log")
        try:
            overview = ClusterOverview.model_validate(
                bounded_http.get(f"{rest_url}/overview", 3.0, security).json("/overview"))
            if overview.slots_total >= slots:
                return
            last = f"{overview.slots_total} of {slots} slots registered"
        except (httpx.HTTPError, ValidationError) as exc:
            last = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        time.sleep(0.5)
    raise StackError(f"Flink at {rest_url} did not become ready: {last}")


def start_taskmanager(dist: FlinkDistribution, flink_home: Path, account: ServiceAccount,
                      niceness: int = 0) -> ProcessRecord:
    """Start one more TaskManager with the cluster's config (at its OS priority); return its record (a fault's
    replacement)."""
    conf, log, pid_dir, lib = flink_home / "conf", flink_home / "log", flink_home / "pid", flink_home / "lib"
    before = set(_read_pids(pid_dir, TASKMANAGER_DAEMON))
    env = script_env(conf, log, pid_dir, lib if lib.exists() else None, account.run_as())
    done = subprocess.run([*niced(niceness), "bash", str(dist.bin / "taskmanager.sh"), "start"], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=SCRIPT_TIMEOUT_S,
                          **account.popen_kwargs())
    new = [pid for pid in _read_pids(pid_dir, TASKMANAGER_DAEMON) if pid not in before]
    if done.returncode != 0 or not new:
        raise StackError(f"could not start a TaskManager: {(done.stderr or done.stdout).strip()[-300:]}")
    return identify(new[-1], "this stack's TaskManager", taskmanager_marks(conf), EXEC_WAIT_S)
