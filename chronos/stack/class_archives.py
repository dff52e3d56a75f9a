"""Class-data sharing archives for the stack's JVMs (JDK 13+ dynamic AppCDS), kept in the artifact cache.

A fresh JobManager spends most of its first job submission loading and verifying Flink's and the planner's classes:
on two cores a stack start and its first submission took 31-34 core-s, 21 with these archives (JobManager 12 -> 7
core-s, TaskManager 6.6 -> 4, broker 4 -> 2.3), and the stack was up in 7.5 s instead of 10. A profile starts a
cluster per copy at a low priority, so that CPU is also the time its copies take to reach RUNNING.

How an archive comes to be: the first stack to start a role without one claims it (a file created exclusively in
the cache) and starts that role's JVMs with `-XX:ArchiveClassesAtExit` into its own services directory; the JVM
writes the archive when it exits normally (a stop, not a kill). After the stack's processes have stopped, `keep`
moves a complete archive into the cache (one rename) and drops the claim; later JVMs start with
`-XX:SharedArchiveFile`. Only one JVM ever writes a given file: the claim is the cache's, and a cluster with spare
TaskManagers (several alive at once, stopped together) does not claim the TaskManager's. The JVM checks an archive
against its own build and the classpath's jars on every start and runs without it (`-Xshare:auto`, the default) if
it does not match; `complete` refuses a file whose header the JVM never wrote. The cache directory is keyed by the
JVM and the jars, so an upgrade starts a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Role = Literal["kafka", "jobmanager", "taskmanager"]
ROLES: tuple[Role, ...] = ("kafka", "jobmanager", "taskmanager")
# The first four bytes of a dynamic archive (HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, little-endian): the header is
# written after the archive's regions, so a file cut short by a kill lacks it.
DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")
STALE_CLAIM_S = 3600.0  # a claim whose stack never stopped cleanly (its host rebooted) is given up after this


def complete(archive: Path) -> bool:
    try:
        with open(archive, "rb") as handle:
            return handle.read(4) == DYNAMIC_MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class ClassArchives:
    directory: Path  # <cache>/class-archives/<key>: readable by the stack's service user

    @classmethod
    def in_cache(cls, cache_dir: Path, runtime: tuple[Path, ...]) -> ClassArchives:
        """The archives for this JVM and these jars (the Java binary, Flink's home, the connector jar, Kafka's
        lib): a different one of any of them gets a directory of its own."""
        java = shutil.which("java")
        parts = [str(Path(java).resolve()) if java else "java"] + [str(p.resolve()) for p in runtime]
        for path in (Path(parts[0]), *runtime):
            try:
                parts.append(str(path.stat().st_mtime_ns))
            except OSError:
                parts.append("-")
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
        return cls(cache_dir / "class-archives" / key)

    def archive(self, role: Role) -> Path:
        return self.directory / f"{role}.jsa"

    def _claim(self, role: Role) -> Path:
        return self.directory / f"{role}.claim"

    def flag(self, role: Role, dump_dir: Path, write: bool = True, clock: float | None = None) -> str:
        """The JVM option for this role: use the archive there is, else (`write`) write one at exit into `dump_dir`
        if no other stack is writing one, else none. A stack meant to run for hours should not write: the claim
        would keep every other stack from writing one until it stops."""
        archive = self.archive(role)
        if complete(archive):
            return f"-XX:SharedArchiveFile={archive}"
        if not write:
            return ""
        claim, dumped = self._claim(role), dump_dir / f"{role}.jsa"
        for directory in (self.directory.parent, self.directory):
            directory.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):  # chronos's umask is 077: the services' user must get in
                directory.chmod(0o755)
        now = time.time() if clock is None else clock
        try:
            if now - claim.stat().st_mtime > STALE_CLAIM_S:
                claim.unlink(missing_ok=True)
        except OSError:
            pass
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return ""
        with os.fdopen(fd, "w") as handle:
            handle.write(str(dumped))
        return f"-XX:ArchiveClassesAtExit={dumped}"

    def keep(self, dump_dir: Path) -> list[Role]:
        """Once the JVMs that wrote into `dump_dir` have stopped: each complete archive moved into the cache, and
        every claim of this directory dropped (an archive a kill cut short is deleted). The roles kept."""
        kept: list[Role] = []
        for role in ROLES:
            claim, dumped = self._claim(role), dump_dir / f"{role}.jsa"
            try:
                ours = claim.read_text() == str(dumped)
            except OSError:
                ours = False
            if not ours:
                continue
            if complete(dumped):
                staged = self.directory / f".{role}.{os.getpid()}.jsa"  # the cache may be on another file system
                shutil.move(dumped, staged)
                os.replace(staged, self.archive(role))
                kept.append(role)
            else:
                dumped.unlink(missing_ok=True)
            claim.unlink(missing_ok=True)
        return kept
