"""How scripts/test.sh's two workers are handed whole modules: one module ahead, and never a second profile to wait.

pytest-xdist's `--dist loadfile` hands a worker its next module while two of its tests are still pending. A worker
with a one-test module running therefore already holds the module after it: in CI the last two long modules (a
one-minute tuner test, then a four-minute profile) both went to one worker, and the other had nothing left for
the profile's 257-315 s. Here a worker gets its next module only when it must, at the start of the last test it
holds (a worker runs a test once it knows the one after it: pytest's fixture teardown needs it).

The modules marked `copies` profile a job and take turns (the `profiling_turn` fixture): one handed to a worker
while another worker runs a profile would wait for the whole of it. Such a module is passed over while a profile
runs elsewhere, unless nothing else is left. The workers tell the controller which modules these are in a file
(the controller sees test ids only, never their marks): `announce_exclusive` on the workers, read once by the
scheduler when it first hands out work.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

EXCLUSIVE_FILE_KEY = "chronos_exclusive_modules"


def next_module(queue: Sequence[str], exclusive: Collection[str], exclusive_elsewhere: bool) -> str:
    """The first module in the suite's order, passing over an exclusive one while another worker holds one."""
    if exclusive_elsewhere:
        for scope in queue:
            if scope not in exclusive:
                return scope
    return queue[0]


def announce_exclusive(config: pytest.Config, modules: Collection[str]) -> None:
    """On a worker: the modules that take turns, written where the controller's scheduler reads them."""
    path = getattr(config, "workerinput", {}).get(EXCLUSIVE_FILE_KEY)
    if path is None:
        return
    partial = Path(f"{path}.{os.getpid()}")
    partial.write_text(json.dumps(sorted(modules)))
    partial.replace(path)  # every worker writes the same list; a reader never sees half of one


class OneModuleAhead(LoadFileScheduling):
    """`--dist loadfile`, handing out a module only when a worker needs one, and passing over an exclusive module
    while another worker holds one."""

    def __init__(self, config: pytest.Config, exclusive_file: Path, log: Any = None) -> None:
        super().__init__(config, log)
        self._exclusive_file = exclusive_file
        self._exclusive: frozenset[str] | None = None

    def _exclusive_modules(self) -> frozenset[str]:
        if self._exclusive is None:  # the workers wrote it while collecting, before the first hand-out
            try:
                self._exclusive = frozenset(json.loads(self._exclusive_file.read_text()))
            except (OSError, ValueError):
                self._exclusive = frozenset()
        return self._exclusive

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return  # the worker can still run what it holds
        self._assign_work_unit(node)

    def _assign_work_unit(self, node: WorkerController) -> None:
        exclusive = self._exclusive_modules()
        elsewhere = any(scope in exclusive and not all(done.values())
                        for other, work in self.assigned_work.items() if other is not node
                        for scope, done in work.items())
        scope = next_module(list(self.workqueue), exclusive, elsewhere)
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, completed in work_unit.items() if not completed])
