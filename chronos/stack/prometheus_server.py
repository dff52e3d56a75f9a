"""A Prometheus server on loopback (Debian's `prometheus`, installed by scripts/setup.sh), scraping the
targets it is given: what tests run PromQL against, and what a local user points Grafana at."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml
from pydantic import BaseModel, ConfigDict

from chronos import bounded_http
from chronos.errors import InvalidInput, StackError, ToolMissing
from chronos.input_files import read_own_model, write_private
from chronos.stack.ports import LOOPBACK, free_ports
from chronos.stack.processes import ProcessRecord, Report, check, running, spawn, stop
from chronos.stack.service_account import SERVICES_ROOT, remove_services_dir, service_account


def prometheus_config(targets: Sequence[str], scrape_interval_s: float = 2.0) -> str:
    """A scrape config for `host:port/path` targets (one job per distinct path)."""
    by_path: dict[str, list[str]] = {}
    for target in targets:
        address = target.removeprefix("http://").removeprefix("https://")
        host, slash, path = address.partition("/")
        by_path.setdefault("/" + path if slash else "/metrics", []).append(host)
    jobs = [{"job_name": f"chronos-{i}", "metrics_path": path, "static_configs": [{"targets": hosts}]}
            for i, (path, hosts) in enumerate(sorted(by_path.items()))]
    return yaml.safe_dump({"global": {"scrape_interval": f"{scrape_interval_s:g}s",
                                      "evaluation_interval": f"{scrape_interval_s:g}s"},
                           "scrape_configs": jobs}, sort_keys=False)


def _quiet(_: str) -> None:
    return None


class _ServerRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    process: ProcessRecord
    url: str
    directory: str


@dataclass(frozen=True)
class PrometheusServer:
    process: ProcessRecord
    url: str
    directory: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, report: Report = _quiet) -> None:
        stop([self.process], grace_seconds=10, report=report)

    def purge(self) -> None:
        """Stop it and delete its data, where that lives apart from the caller's directory (as root)."""
        self.stop()
        remove_services_dir(self.directory, self.directory.parent)


def start_prometheus(directory: Path, targets: Sequence[str], port: int | None = None,
                     timeout_s: float = 30.0) -> PrometheusServer:
    """Start Prometheus as the stack's service account; its config and data go to `directory`, or (as
    root, when `directory` is not already the service account's) to a directory of the account's."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise ToolMissing("prometheus is not installed; run scripts/setup.sh (apt package prometheus)")
    account = service_account()
    if account.separate and SERVICES_ROOT not in (directory.parent, directory.parent.parent):
        directory = account.services_dir(directory)  # a services directory of its own
    # Written without following a link (chronos.stack.service_tree), in the services directory it is or lies in.
    tree = account.tree(directory.parent if directory.parent.parent == SERVICES_ROOT else directory)
    tree.directory(directory)
    config = tree.write(directory / "prometheus.yml", prometheus_config(targets))
    port = port or free_ports(1)[0]
    config_flag = f"--config.file={config}"
    process = spawn([binary, config_flag, f"--storage.tsdb.path={directory / 'data'}",
                     f"--web.listen-address={LOOPBACK}:{port}", "--web.enable-lifecycle"],
                    tree.append(directory / "prometheus.log"), role="chronos's Prometheus", argv_marks=(config_flag,),
                    env=account.env(), cwd=directory, run_as=account.run_as())
    server = PrometheusServer(process, f"http://{LOOPBACK}:{port}", directory)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not running(process):
            raise StackError(f"prometheus exited at start; see {directory / 'prometheus.log'}")
        try:
            if bounded_http.get(server.url + "/-/ready", deadline_s=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    server.stop()
    raise StackError(f"prometheus not ready on {server.url} after {timeout_s:.0f} s")


def _record(stack_dir: Path) -> Path:
    return stack_dir / "prometheus" / "server.json"


def _recorded(stack_dir: Path) -> PrometheusServer | None:
    path = _record(stack_dir)
    if not path.exists():
        return None
    try:
        record = read_own_model(path, _ServerRecord, "Prometheus record")
    except InvalidInput:
        return None  # not a record this chronos wrote: nothing in it is trusted
    try:
        directory = service_account().services_dir(stack_dir) / "prometheus"
    except StackError:
        return None
    if Path(record.directory).resolve() != directory.resolve() or not record.url.startswith(f"http://{LOOPBACK}:"):
        return None  # it names a place or an address this stack's Prometheus never has
    return PrometheusServer(record.process, record.url, directory)


def local_prometheus(stack_dir: Path, report: Report = _quiet) -> PrometheusServer | None:
    """The Prometheus `chronos prometheus up` started for this stack, if it still runs (a recorded PID
    that now holds another process is said through `report`)."""
    server = _recorded(stack_dir)
    if server is None:
        return None
    found = check(server.process)
    if found.verdict == "stale":
        report(found.stale_line())
    return server if found.ours else None


def start_local_prometheus(stack_dir: Path, targets: Sequence[str], port: int | None,
                           report: Report = _quiet) -> PrometheusServer:
    """A Prometheus kept beside the local stack (its data with the stack's services), found again by
    `local_prometheus` and stopped by `stop_local_prometheus`."""
    running = local_prometheus(stack_dir, report)
    if running is not None:
        return running
    server = start_prometheus(service_account().services_dir(stack_dir) / "prometheus", targets, port)
    _record(stack_dir).parent.mkdir(parents=True, exist_ok=True)
    write_private(_record(stack_dir), _ServerRecord(process=server.process, url=server.url,
                                                    directory=str(server.directory)).model_dump_json())
    return server


def stop_local_prometheus(stack_dir: Path, report: Report = _quiet) -> bool:
    server = local_prometheus(stack_dir, report)
    _record(stack_dir).unlink(missing_ok=True)
    if server is None:
        return False
    server.stop(report)
    return True
