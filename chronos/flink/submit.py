"""Submitting a job (fresh or from a savepoint) with given checkpoint settings, two ways.

`RestSubmitter` uploads flink-python once and runs it through POST /jars/:id/run with the
PythonDriver entry class: no client JVM per restart, so it is the path retuning uses.
`CliSubmitter` is `flink run -d -py ...`, kept as the reference the benchmark compares against.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Protocol

from chronos.errors import FlinkRequestFailed
from chronos.flink.distribution import FlinkDistribution, script_env
from chronos.flink.rest import FlinkRestClient
from chronos.model import CheckpointSettings, JobSpec

PYTHON_DRIVER = "org.apache.flink.client.python.PythonDriver"


class JobSubmitter(Protocol):
    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        """Submit `spec`, restored from `savepoint` if given; return the new job id."""
        ...


def submission_config(spec: JobSpec, settings: CheckpointSettings) -> dict[str, str]:
    config = dict(spec.extra_config)
    config.update(settings.flink_config())
    config["pipeline.name"] = spec.name
    return config


def program(spec: JobSpec, python_jar: Path) -> tuple[Path, str, list[str]]:
    """(jar to run, entry class, program arguments) of a spec: a PyFlink program runs through
    flink-python's PythonDriver, a jar job through its own entry class."""
    if spec.jar:
        return Path(spec.jar), spec.entry_class, list(spec.args)
    return python_jar, PYTHON_DRIVER, ["-py", spec.python_file, *spec.args]


class RestSubmitter:
    def __init__(self, client: FlinkRestClient, python_jar: Path) -> None:
        self._client = client
        self._python_jar = python_jar
        self._jar_ids: dict[Path, str] = {}

    def _ensure_jar(self, jar: Path) -> str:
        """Upload once per jar; a jar already on the cluster (same file name) is reused."""
        if jar not in self._jar_ids:
            existing = [jid for jid, name in self._client.uploaded_jars().items() if name == jar.name]
            self._jar_ids[jar] = existing[0] if existing else self._client.upload_jar(jar)
        return self._jar_ids[jar]

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        jar, entry_class, args = program(spec, self._python_jar)
        return self._client.run_jar(
            self._ensure_jar(jar),
            entry_class,
            args,
            savepoint_path=savepoint,
            flink_configuration=submission_config(spec, settings),
            parallelism=spec.parallelism,
        )


_SUBMITTED = re.compile(r"JobID ([0-9a-f]{32})")


class CliSubmitter:
    def __init__(
        self, dist: FlinkDistribution, rest_url: str, conf_dir: Path, log_dir: Path, lib_dir: Path | None = None
    ) -> None:
        self._dist = dist
        self._address = rest_url.removeprefix("http://").removeprefix("https://")
        self._env = script_env(conf_dir, log_dir, log_dir, lib_dir)

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        argv = ["bash", str(self._dist.bin / "flink"), "run", "-d", "-m", self._address]
        if savepoint:
            argv += ["-s", savepoint]
        if spec.parallelism:
            argv += ["-p", str(spec.parallelism)]
        argv += [f"-D{key}={value}" for key, value in submission_config(spec, settings).items()]
        argv += ["-c", spec.entry_class, spec.jar, *spec.args] if spec.jar else ["-py", spec.python_file, *spec.args]
        done = subprocess.run(argv, env=self._env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        match = _SUBMITTED.search(done.stdout + done.stderr)
        if done.returncode != 0 or match is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FlinkRequestFailed(f"flink run failed: {tail[0][:300]}")
        return match.group(1)
