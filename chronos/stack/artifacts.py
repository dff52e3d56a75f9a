"""Maven artifacts the stack runs: the Kafka broker's jars and the Flink Kafka connector.

They come from Maven Central through the user's own `mvn` (so its settings, proxy and ~/.m2 cache
apply) and are copied once into a cache directory; a marker file records a complete copy of one pom (its
SHA-256), so an interrupted download is redone rather than half-used, and a pom that changed (another
connector version) is fetched again rather than served from the cache of the one before. The copies are
public jars and are written readable by all (umask 022): as root, the stack's services run as another
user who must load them.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from chronos.errors import StackError, ToolMissing

_COMPLETE = ".complete"
MAVEN_TIMEOUT_S = 900.0  # a first download of ~100 jars on a slow link; never wait forever on it


def _public_dir(path: Path) -> None:
    """Create `path` and any missing parents readable and traversable by all (the cache holds public jars)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir()
        directory.chmod(0o755)


@dataclass(frozen=True)
class Artifacts:
    kafka_lib: Path
    connector_jar: Path


def _copy_dependencies(pom_name: str, target: Path, exclude_transitive: bool) -> None:
    digest = hashlib.sha256((resources.files("chronos.stack") / pom_name).read_bytes()).hexdigest()
    marker = target / _COMPLETE
    if marker.exists() and marker.read_text().strip() == digest:
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing("Maven (mvn) is not installed; install it (apt-get install maven) and retry")
    if target.exists():
        shutil.rmtree(target)
    _public_dir(target)
    with resources.as_file(resources.files("chronos.stack") / pom_name) as pom:
        argv = [
            mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
            f"-DoutputDirectory={target}", "-DincludeScope=runtime",
            f"-DexcludeTransitive={str(exclude_transitive).lower()}",
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, cwd=target, umask=0o022,
                                  timeout=MAVEN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise StackError(f"fetching {pom_name} from Maven Central took over {MAVEN_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln]
        detail = lines[0].strip() if lines else f"mvn exited with {done.returncode}"
        raise StackError(f"could not fetch {pom_name} from Maven Central: {detail}")
    marker.write_text(digest + "\n")


def ensure_artifacts(cache_dir: Path) -> Artifacts:
    """Fetch (first time) or reuse the cached broker and connector jars."""
    kafka_lib = cache_dir / "kafka-broker"
    connectors = cache_dir / "flink-connectors"
    _copy_dependencies("kafka-broker.pom.xml", kafka_lib, exclude_transitive=False)
    _copy_dependencies("flink-connectors.pom.xml", connectors, exclude_transitive=True)
    jars = sorted(connectors.glob("flink-sql-connector-kafka-*.jar"))
    if not jars:
        raise StackError(f"the Flink Kafka connector jar is missing from {connectors}")
    return Artifacts(kafka_lib=kafka_lib, connector_jar=jars[0])
