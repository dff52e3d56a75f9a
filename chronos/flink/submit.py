"""Submitting a job (fresh or from a savepoint) with given checkpoint settings, two ways.

`RestSubmitter` uploads flink-python once and runs it through POST /jars/:id/run with the
PythonDriver entry class: no client JVM per restart, so it is the path retuning uses.
`CliSubmitter` is `flink run -d -py ...`, kept as the reference the benchmark compares against.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from chronos.errors import FlinkRequestFailed
from chronos.flink.distribution import FlinkDistribution, script_env
from chronos.flink.rest import FlinkRestClient
from chronos.model import CheckpointSettings, JobSpec, RunAs

PYTHON_DRIVER = "org.apache.flink.client.python.PythonDriver"


class JobSubmitter(Protocol):
    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        """Submit `spec`, restored from `savepoint` if given; return the new job id."""
        ...


def content_named(jar: Path) -> str:
    """`<stem>-<sha256 prefix>.jar`: the name under which a jar's exact content is uploaded."""
    digest = hashlib.sha256()
    with open(jar, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", jar.stem)[:80] or "job"
    return f"{stem}-{digest.hexdigest()[:16]}.jar"


def submission_config(spec: JobSpec, settings: CheckpointSettings) -> dict[str, str]:
    config = dict(spec.extra_config)
    config.update(settings.flink_config())
    config["pipeline.name"] = spec.name
    return config


def program(spec: JobSpec, python_jar: Path | Callable[[], Path]) -> tuple[Path, str, list[str]]:
    """(jar to run, entry class, program arguments) of a spec: a PyFlink program runs through
    flink-python's PythonDriver, a jar job through its own entry class. `python_jar` is looked for only for a
    PyFlink program: a jar job needs no Flink distribution here (the container image holds none)."""
    if spec.jar:
        return Path(spec.jar), spec.entry_class, list(spec.args)
    return (python_jar if isinstance(python_jar, Path) else python_jar()), PYTHON_DRIVER, \
        ["-py", spec.python_file, *spec.args]


class RestSubmitter:
    def __init__(self, client: FlinkRestClient, python_jar: Path | Callable[[], Path]) -> None:
        """`python_jar`: flink-python's jar, or where to find it when a PyFlink program is first submitted."""
        self._client = client
        self._python_jar = python_jar
        self._jar_ids: dict[tuple[Path, int, int], str] = {}  # (path, mtime ns, size) -> jar id on the cluster

    def _ensure_jar(self, jar: Path) -> str:
        """Upload a jar under a name carrying its content hash, and reuse only a jar of that exact name: a
        rebuilt `my-job.jar` (or someone else's jar of that name on a shared cluster) is never taken for
        the one chronos means to run."""
        stat = jar.stat()
        key = (jar, stat.st_mtime_ns, stat.st_size)  # a rebuild changes these: hashed again, uploaded again
        if key not in self._jar_ids:
            name = content_named(jar)
            existing = [jid for jid, uploaded in self._client.uploaded_jars().items() if uploaded == name]
            self._jar_ids[key] = existing[0] if existing else self._client.upload_jar(jar, name)
        return self._jar_ids[key]

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
CLI_TIMEOUT_S = 300.0  # a client JVM plus planning on a cold cluster; never wait forever on it


class CliSubmitter:
    """`flink run` as the account the cluster runs as (`run_as`): the client reads the cluster's
    config directory, which that account can write, so it never runs as anyone else."""

    def __init__(self, dist: FlinkDistribution, rest_url: str, conf_dir: Path, log_dir: Path, lib_dir: Path | None,
                 run_as: RunAs) -> None:
        self._dist = dist
        # An https:// address kept whole: `flink run -m host:port` speaks plain HTTP whatever the config says (it
        # got "Channel became inactive" from a REST API over TLS), `-m https://host:port` speaks TLS.
        self._address = rest_url if rest_url.startswith("https://") else rest_url.removeprefix("http://")
        self._env = script_env(conf_dir, log_dir, log_dir, lib_dir, run_as)
        self._run_as = run_as

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        argv = ["bash", str(self._dist.bin / "flink"), "run", "-d", "-m", self._address]
        if savepoint:
            argv += ["-s", savepoint]
        if spec.parallelism:
            argv += ["-p", str(spec.parallelism)]
        argv += [f"-D{key}={value}" for key, value in submission_config(spec, settings).items()]
        argv += ["-c", spec.entry_class, spec.jar, *spec.args] if spec.jar else ["-py", spec.python_file, *spec.args]
        try:
            done = subprocess.run(argv, env=self._env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  timeout=CLI_TIMEOUT_S, **self._run_as.popen_kwargs())
        except subprocess.TimeoutExpired as exc:
            raise FlinkRequestFailed(f"flink run did not return within {CLI_TIMEOUT_S:.0f} s") from exc
        match = _SUBMITTED.search(done.stdout + done.stderr)
        if done.returncode != 0 or match is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FlinkRequestFailed(f"flink run failed: {tail[0][:300]}")
        return match.group(1)
