"""The tuner's container image (image/Containerfile), built here with no container daemon and no registry by
scripts/build_image.sh: an OCI archive of the Helm chart's default reference and its digest, which unpacks into a
root filesystem on which chronos runs as the image's non-root user with the root read-only, holding chronos and its
libraries at the versions the tests run with and no Flink, JDK, compiler, pip or package cache; and whose tuner,
from inside it with the host's network, reaches the local stack's live job over Flink's REST API and its Prometheus
reporter and decides. Run as a runtime runs it (tests.support.container_image)."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import BackgroundLoad, DemoJob, cache_dir
from tests.support.container_image import ROOT, BuiltImage, ImageConfig, build, can_run_images, prepare, run_in, unpack

pytestmark = pytest.mark.long(3)  # the build: a Debian base, the wheel and its libraries, an OCI archive

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
REPOSITORY = yaml.safe_load((ROOT / "helm" / "chronos" / "values.yaml").read_text())["image"]["repository"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltImage]:
    why = can_run_images()
    if why is not None:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("image")
    try:
        yield build(out, cache_dir() / "image-base")
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def image(built: BuiltImage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ImageConfig]]:
    root = tmp_path_factory.mktemp("unpacked") / "rootfs"
    try:
        config = unpack(built.archive, root)
        prepare(root)
        yield root, config
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_build_writes_an_oci_archive_of_the_charts_default_reference_and_its_digest(
        built: BuiltImage, image: tuple[Path, ImageConfig]) -> None:
    _, config = image
    assert built.archive.name == f"chronos-image-{VERSION}.oci.tar"
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", built.digest)
    assert config.manifest_digest == built.digest, "the digest written is the archive's manifest's"
    assert config.reference in (f"{REPOSITORY}:{VERSION}", VERSION), config.reference
    assert f"{REPOSITORY}:{VERSION}" in built.build_output  # what `image.repository` and appVersion make
    with tarfile.open(built.archive) as oci:
        layout = oci.extractfile("oci-layout")
        assert layout is not None and json.load(layout)["imageLayoutVersion"] == "1.0.0"
    # What the chart runs it as: its user (podSecurityContext.runAsUser 10001), args after the entry point.
    assert config.user == "10001:10001" and config.entrypoint == ("/opt/chronos/bin/chronos",)
    assert "HOME=/tmp" in config.env and config.working_dir == "/tmp"


def test_chronos_runs_in_it_as_the_non_root_user_on_a_read_only_root(image: tuple[Path, ImageConfig]) -> None:
    root, config = image
    version = run_in(root, config, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"chronos {VERSION}", version.stderr
    helped = run_in(root, config, "tune", "--help")
    assert helped.returncode == 0 and "Usage: chronos tune" in helped.stdout and "--dry-run" in helped.stdout, \
        helped.stderr
    who = run_in(root, config, "-c", "import os, pathlib; print(os.getuid(), os.getgid()); "
                 "pathlib.Path('/tmp/w').write_text('x'); pathlib.Path('/data/w').write_text('x'); "
                 "pathlib.Path('/opt/chronos/w').write_text('x')", entrypoint=("/opt/chronos/bin/python",))
    assert who.stdout.split() == ["10001", "10001"], who.stderr
    assert "Read-only file system" in who.stderr, "only the chart's volumes are writable"


def test_it_holds_chronos_at_the_tested_versions_and_no_flink_jdk_compiler_pip_or_cache(
        image: tuple[Path, ImageConfig]) -> None:
    root, config = image
    listed = run_in(root, config, "-c", "import importlib.metadata as m, json; print(json.dumps("
                    "{d.metadata['Name']: d.version for d in m.distributions()}))",
                    entrypoint=("/opt/chronos/bin/python",))
    assert listed.returncode == 0, listed.stderr
    installed = {canonical(name): version for name, version in json.loads(listed.stdout).items()}
    pinned = {canonical(line.split("==")[0]): line.split("==")[1]
              for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line}
    assert installed.pop("chronos-flink") == VERSION
    assert installed == {name: pinned.get(name) for name in installed}, \
        "every library at the version the tests run with"
    assert not {"apache-flink", "apache-beam", "pyarrow", "pandas", "pip"} & installed.keys()
    site = next((root / "opt" / "chronos" / "lib").glob("python3*/site-packages"))
    assert not (site / "pyflink").exists() and not (site / "pip").exists()
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    tools = [p for p in files if p.name in {"java", "javac", "gcc", "cc", "cc1", "ld", "make", "as"}]
    assert not tools, tools
    assert not [p for p in files if p.suffix == ".jar"], "no Flink distribution, no jar"
    for cache in ("var/cache/apt", "var/lib/apt/lists", "root/.cache", "tmp"):
        assert not [p for p in (root / cache).rglob("*") if p.is_file() and p.name != "lock"], cache
    # Compiled ahead: on a read-only root no bytecode is ever written at start-up.
    sources = list((site / "chronos").rglob("*.py"))
    assert sources and all(list(p.parent.glob(f"__pycache__/{p.stem}.cpython-*.pyc")) for p in sources)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def test_its_tuner_decides_for_a_live_job_of_the_local_stack(demo_job: DemoJob,
                                                            image: tuple[Path, ImageConfig]) -> None:
    root, config = image
    stack = demo_job.stack
    job_id = demo_job.submit(10_000)
    load = BackgroundLoad(stack.bootstrap, demo_job.settings.input_topic, rate=300, duration_s=60)
    try:
        reporters = [arg for url in stack.prometheus_urls for arg in ("--reporter-url", url)]
        tuned = run_in(root, config, "tune", "--json", "--job", job_id, "--rest-url", stack.rest_url, *reporters,
                       "--recovery", "30s", "--interval-min", "2s", "--interval-max", "30s", "--startup-grace", "5s",
                       "--decide-every", "5s", "--collect-every", "2s", "--horizon", "20s", "--duration", "20s",
                       "--dry-run", "--metrics-port", "-1", "--db", "/data/chronos.db", "--stack-dir", "/data/stack",
                       timeout_s=120)
    finally:
        load.halt()
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    assert "Traceback" not in tuned.stderr
    events = [json.loads(line) for line in tuned.stdout.splitlines() if line.strip()]
    decisions = [e for e in events if e.get("event") == "decision" and "grace" not in e["reason"]]
    assert decisions, [e.get("text", e.get("event")) for e in events][-20:]
    assert decisions[-1]["mode"] == "cold-start" and decisions[-1]["wanted_s"] is not None, decisions[-1]
    readings = [e for e in events if e.get("event") == "reading"]
    assert any(r.get("input_rate") for r in readings), "it read the job's metrics from inside the image"
    assert demo_job.flink.job(job_id).state == "RUNNING", "a dry run leaves the job as it was"
