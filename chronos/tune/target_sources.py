"""Where a many-job controller's jobs come from, looked at again while it runs: a jobs file (read again when it
changes) or the annotated FlinkDeployments of some namespaces (listed every so often). Each answers None while
nothing changed, and says (in one line, once) what it cannot read, so the jobs go on as they were meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from chronos.errors import ChronosError
from chronos.tune.discovery import SWITCH, DeploymentLister, discovered
from chronos.tune.job_targets import JobTarget, read_job_targets

DISCOVER_EVERY_S = 30.0  # how often the namespaces' FlinkDeployments are listed (a list, not a watch: a missed
# event costs one period, and the API server is asked one list per namespace per period, whatever the jobs)


class TargetSource(Protocol):
    lost: str  # why a job it no longer names is let go
    changed: str  # why a job whose entry changed is let go (and taken up again)

    def look(self, again: bool) -> tuple[JobTarget, ...] | None:
        """The jobs to tune now, or None while nothing changed (`again`: answer anyway: a SIGHUP, or a job whose
        entry changed still leaving). What cannot be read is said, and the jobs go on as they were."""
        ...


class FileTargets:
    """The jobs file, read again when its modification time changes."""

    lost = "no longer in the jobs file"
    changed = "its entry in the jobs file changed"

    def __init__(self, path: Path, say: Callable[[str], None]) -> None:
        self._path, self._say = path, say
        self._mtime_ns: int | None = None
        self._last: tuple[JobTarget, ...] = ()

    def first(self) -> tuple[JobTarget, ...]:
        """The file as the run starts: one that does not read refuses the run, before anything starts."""
        self._mtime_ns = self._path.stat().st_mtime_ns if self._path.exists() else None
        self._last = read_job_targets(self._path)
        return self._last

    def look(self, again: bool) -> tuple[JobTarget, ...] | None:
        try:
            mtime = self._path.stat().st_mtime_ns
        except OSError as exc:
            if again:
                self._say(f"jobs file {self._path} cannot be read ({exc.strerror}); the jobs go on as they were")
            return None
        if mtime == self._mtime_ns and not again:
            return None
        self._mtime_ns = mtime
        try:
            self._last = read_job_targets(self._path)
        except ChronosError as exc:
            self._say(f"{exc}; the jobs go on as they were")
            return None
        return self._last


class DiscoveredTargets:
    """The FlinkDeployments of the namespaces annotated for chronos (`chronos.tune.discovery`), listed every
    `every_s`; a deployment refused for its annotations is said once (again only if what is said changes)."""

    lost = f"its FlinkDeployment is gone or no longer annotated {SWITCH}: \"true\""
    changed = "its FlinkDeployment's chronos annotations changed"

    def __init__(self, lister: DeploymentLister, namespaces: tuple[str, ...], defaults: dict[str, object],
                 every_s: float, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._lister, self._namespaces, self._defaults = lister, namespaces, defaults
        self._every_s, self._say, self._clock = every_s, say, clock
        self._next = 0.0
        self._said: set[str] = set()
        self._failing: str | None = None
        self._last: tuple[JobTarget, ...] = ()

    def first(self) -> tuple[JobTarget, ...]:
        return self.look(True) or ()

    def look(self, again: bool) -> tuple[JobTarget, ...] | None:
        now = self._clock()
        if now < self._next:
            return self._last if again else None
        self._next = now + self._every_s
        try:
            listed = [self._lister.list(namespace) for namespace in dict.fromkeys(self._namespaces)]
        except ChronosError as exc:
            if str(exc) != self._failing:
                self._say(f"{exc}; the jobs found before go on until the next list")
            self._failing = str(exc)
            return None
        if self._failing is not None:
            self._say("FlinkDeployments listed again")
            self._failing = None
        found = discovered([item for one in listed for item in one.items], self._defaults)
        for line in (*(line for one in listed for line in one.unreadable), *found.refused):
            if line not in self._said:
                self._say(f"not tuned: {line}")
        self._said = {*(line for one in listed for line in one.unreadable), *found.refused}
        self._last = found.targets
        return self._last
