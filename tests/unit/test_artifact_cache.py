"""The stack's Maven artifacts are fetched once per pom: reused while the pom is the same, fetched again when it
changed (another connector version), never served from the cache of the pom before. `mvn` here is a script of
our own on PATH that records its calls and writes the jar it was asked for."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from chronos.stack.artifacts import ensure_artifacts

FAKE_MVN = """#!/bin/sh
echo "$@" >> "{calls}"
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${{arg#-DoutputDirectory=}}";; esac
done
touch "$out/flink-sql-connector-kafka-9.9.9.jar" "$out/kafka-clients.jar"
"""


def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir, calls = tmp_path / "bin", tmp_path / "mvn-calls.txt"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN.format(calls=calls))
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return calls


def fetches(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def test_artifacts_are_fetched_once_and_again_when_the_pom_changed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_mvn(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    first = ensure_artifacts(cache)
    assert fetches(calls) == 2 and first.connector_jar.name == "flink-sql-connector-kafka-9.9.9.jar"
    ensure_artifacts(cache)
    assert fetches(calls) == 2, "the same poms: the cache serves them"
    (cache / "flink-connectors" / ".complete").write_text("a digest of the pom before\n")
    (cache / "flink-connectors" / "flink-sql-connector-kafka-0.0.1.jar").touch()
    again = ensure_artifacts(cache)
    assert fetches(calls) == 3, "the connectors' pom changed: fetched again, the broker's reused"
    assert [p.name for p in (cache / "flink-connectors").glob("flink-sql-*.jar")] == ["flink-sql-connector-kafka-9.9.9.jar"], \
        "nothing of the copy before is left to be picked"
    assert again.connector_jar == first.connector_jar


def test_an_interrupted_fetch_is_redone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_mvn(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    (cache / "kafka-broker").mkdir(parents=True)
    (cache / "kafka-broker" / "half.jar").touch()  # no marker: a copy cut short
    ensure_artifacts(cache)
    assert fetches(calls) == 2 and not (cache / "kafka-broker" / "half.jar").exists()
