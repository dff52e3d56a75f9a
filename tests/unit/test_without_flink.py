"""chronos without its `flink` extra (the container image): the tuner's commands work with no Flink distribution in
the Python, a jar job is still submitted over REST, and what does need one says so in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chronos.errors import StackError
from chronos.flink.distribution import find_distribution
from chronos.flink.submit import RestSubmitter
from chronos.model import CheckpointSettings, JobSpec
from tests.support.cli import assert_one_line_error, chronos


@pytest.fixture
def no_pyflink(tmp_path: Path) -> Path:
    """A directory whose `pyflink` cannot be imported: first on PYTHONPATH, it hides the venv's."""
    package = tmp_path / "hidden" / "pyflink"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('apache-flink is not installed here')\n")
    return package.parent


def test_with_no_pyflink_the_distribution_is_refused_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyflink", None)  # an import of it raises ImportError
    with pytest.raises(StackError, match=r"no Flink distribution in this Python.*chronos-flink\[flink\]"):
        find_distribution()


class JarOnlyCluster:
    """chronos.flink.rest.FlinkRestClient's jar calls, recorded: all RestSubmitter asks of it."""

    def __init__(self) -> None:
        self.uploaded: list[str] = []
        self.ran: list[tuple[str, str, list[str]]] = []

    def uploaded_jars(self) -> dict[str, str]:
        return {}

    def upload_jar(self, jar: Path, name: str | None = None) -> str:
        self.uploaded.append(name or jar.name)
        return "jar-1"

    def run_jar(self, jar_id: str, entry_class: str, args: list[str], **_: object) -> str:
        self.ran.append((jar_id, entry_class, args))
        return "a" * 32


def test_a_jar_job_is_submitted_without_looking_for_a_flink_distribution(tmp_path: Path) -> None:
    jar = tmp_path / "job.jar"
    jar.write_bytes(b"PK\x05\x06" + bytes(18))

    def no_distribution() -> Path:
        raise AssertionError("a jar job needs no flink-python jar")

    cluster = JarOnlyCluster()
    submitter = RestSubmitter(cluster, no_distribution)  # type: ignore[arg-type]
    spec = JobSpec(name="wordcount", jar=str(jar), entry_class="org.example.WordCount", args=("--x", "1"))
    assert submitter.submit(spec, CheckpointSettings(5000)) == "a" * 32
    assert cluster.ran == [("jar-1", "org.example.WordCount", ["--x", "1"])]


def test_a_python_job_looks_for_it_when_it_is_submitted_and_says_what_is_missing(tmp_path: Path) -> None:
    def no_distribution() -> Path:
        raise StackError("no Flink distribution in this Python")

    submitter = RestSubmitter(JarOnlyCluster(), no_distribution)  # type: ignore[arg-type]
    with pytest.raises(StackError, match="no Flink distribution"):
        submitter.submit(JobSpec(name="py", python_file="/x/job.py"), CheckpointSettings(5000))


def test_the_tuner_s_commands_run_without_pyflink_and_a_stack_says_what_it_needs(no_pyflink: Path,
                                                                                  tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": f"{no_pyflink}:{Path(__file__).resolve().parents[2]}"}
    assert chronos("--version", env=env).returncode == 0
    helped = chronos("tune", "--help", env=env)
    assert helped.returncode == 0 and "--dry-run" in helped.stdout, helped.stderr
    assert_one_line_error(chronos("stack", "up", "--stack-dir", str(tmp_path / "s"), env=env),
                          "no Flink distribution in this Python", "chronos-flink[flink]")

