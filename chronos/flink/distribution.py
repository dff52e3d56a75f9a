"""Where the Flink distribution shipped inside the `apache-flink` wheel lives, and the environment
every one of its scripts must run with."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from chronos.errors import StackError
from chronos.model import RunAs


@dataclass(frozen=True)
class FlinkDistribution:
    home: Path

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def conf(self) -> Path:
        return self.home / "conf"

    @property
    def version(self) -> str:
        """The version of the flink-dist jar in lib/ (what every JobManager and TaskManager of it runs)."""
        jars = sorted((self.home / "lib").glob("flink-dist-*.jar"))
        if not jars:
            raise StackError(f"flink-dist jar not found under {self.home / 'lib'}")
        return jars[0].name.removeprefix("flink-dist-").removesuffix(".jar")

    @property
    def python_jar(self) -> Path:
        jars = sorted((self.home / "opt").glob("flink-python-*.jar"))
        if not jars:
            raise StackError(f"flink-python jar not found under {self.home / 'opt'}")
        return jars[0]


def find_distribution() -> FlinkDistribution:
    try:
        import pyflink
    except ImportError as exc:  # chronos without its `flink` extra: the tuner alone (the container image)
        raise StackError("no Flink distribution in this Python: running or submitting a Flink program here needs "
                         "apache-flink (pip install 'chronos-flink[flink]'; the container image holds none)") from exc
    home = Path(pyflink.__file__).resolve().parent
    if not (home / "bin" / "jobmanager.sh").exists():
        raise StackError(f"no Flink distribution found in {home}")
    return FlinkDistribution(home=home)


def script_env(conf_dir: Path, log_dir: Path, pid_dir: Path, lib_dir: Path | None, run_as: RunAs) -> dict[str, str]:
    """Environment for bin/*.sh: the allow-listed one of `run_as` (PyFlink logs every variable of each
    Python process it starts) plus what Flink needs. Without FLINK_CONF_DIR a TaskManager silently uses
    the wheel's default config and never registers; without this Python first on PATH, Python workers
    and the PythonDriver cannot import pyflink. FLINK_LIB_DIR, when given, replaces the wheel's lib/."""
    env = dict(run_as.env)
    if lib_dir is not None:
        env["FLINK_LIB_DIR"] = str(lib_dir)
    env["FLINK_CONF_DIR"] = str(conf_dir)
    env["FLINK_LOG_DIR"] = str(log_dir)
    env["FLINK_PID_DIR"] = str(pid_dir)
    env["TMPDIR"] = str(conf_dir.parent / "tmp")  # the cluster's own temp dir (Python workers, the client)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("FLINK_HOME", None)
    return env
