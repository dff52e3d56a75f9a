"""The stack's class-data sharing archives: one JVM writes each, a cut-short one is never used, a stale claim is
given up. Files only; the JVMs that write and map them run in every real-stack test."""

import os
from pathlib import Path

from chronos.stack.class_archives import DYNAMIC_MAGIC, STALE_CLAIM_S, ClassArchives, complete
from chronos.stack.flink_cluster import FlinkClusterSettings, render_config
from chronos.stack.service_account import service_account


def test_the_first_stack_claims_the_writing_and_the_others_start_without_until_it_is_kept(tmp_path: Path) -> None:
    archives = ClassArchives(tmp_path / "cache" / "class-archives" / "k")
    first, second = tmp_path / "first", tmp_path / "second"
    assert archives.flag("jobmanager", first) == f"-XX:ArchiveClassesAtExit={first / 'jobmanager.jsa'}"
    assert archives.flag("jobmanager", second) == "", "one writer per archive"
    assert archives.flag("kafka", second) == f"-XX:ArchiveClassesAtExit={second / 'kafka.jsa'}", "claims are per role"
    first.mkdir()
    (first / "jobmanager.jsa").write_bytes(DYNAMIC_MAGIC + b"\0" * 64)
    assert archives.keep(first) == ["jobmanager"]
    assert not (first / "jobmanager.jsa").exists()
    assert archives.flag("jobmanager", second) == f"-XX:SharedArchiveFile={archives.archive('jobmanager')}"
    assert archives.keep(second) == [], "the second stack's JVMs wrote nothing; its kafka claim is dropped"
    assert archives.flag("kafka", first).startswith("-XX:ArchiveClassesAtExit="), "claimable again"


def test_a_stack_that_does_not_write_uses_an_archive_there_is_and_claims_nothing(tmp_path: Path) -> None:
    archives = ClassArchives(tmp_path / "a")
    assert archives.flag("jobmanager", tmp_path / "long", write=False) == ""
    assert archives.flag("jobmanager", tmp_path / "short").startswith("-XX:ArchiveClassesAtExit="), "nothing claimed"
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "jobmanager.jsa").write_bytes(DYNAMIC_MAGIC)
    archives.keep(tmp_path / "short")
    assert archives.flag("jobmanager", tmp_path / "long", write=False).startswith("-XX:SharedArchiveFile=")


def test_an_archive_a_kill_cut_short_is_deleted_and_the_role_claimable_again(tmp_path: Path) -> None:
    archives = ClassArchives(tmp_path / "a")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    archives.flag("taskmanager", dumps)
    (dumps / "taskmanager.jsa").write_bytes(b"\0" * 4096)  # regions written, no header
    assert archives.keep(dumps) == []
    assert not (dumps / "taskmanager.jsa").exists() and not complete(archives.archive("taskmanager"))
    assert archives.flag("taskmanager", dumps).startswith("-XX:ArchiveClassesAtExit=")


def test_a_claim_whose_stack_never_stopped_is_given_up_after_an_hour(tmp_path: Path) -> None:
    archives = ClassArchives(tmp_path / "a")
    assert archives.flag("kafka", tmp_path / "gone") != ""
    later = (tmp_path / "a" / "kafka.claim").stat().st_mtime + STALE_CLAIM_S + 1
    assert archives.flag("kafka", tmp_path / "new", clock=later) == f"-XX:ArchiveClassesAtExit={tmp_path / 'new' / 'kafka.jsa'}"


def test_the_cache_key_follows_the_jars(tmp_path: Path) -> None:
    jar = tmp_path / "connector.jar"
    jar.write_bytes(b"1")
    before = ClassArchives.in_cache(tmp_path, (jar,))
    assert ClassArchives.in_cache(tmp_path, (jar,)) == before
    os.utime(jar, ns=(1, 1))
    assert ClassArchives.in_cache(tmp_path, (jar,)) != before, "another jar: another archive"


def test_role_options_go_to_their_role_only(tmp_path: Path) -> None:
    settings = FlinkClusterSettings(home=tmp_path, rest_port=1, rpc_port=2, prometheus_port_base=3,
                                    account=service_account(), jvm_opts="-XX:+UseSerialGC",
                                    role_opts=(("jobmanager", "-XX:SharedArchiveFile=/c/jobmanager.jsa"),))
    opts = render_config({}, settings)["env"]["java"]["opts"]
    assert opts["jobmanager"] == "-XX:SharedArchiveFile=/c/jobmanager.jsa" and "taskmanager" not in opts
    assert "-XX:+UseSerialGC" in opts["all"] and "jsa" not in opts["all"]
