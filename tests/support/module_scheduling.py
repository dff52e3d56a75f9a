"""How scripts/test.sh's workers are handed whole modules: one module ahead, never a second profile to wait, and the
modules that need no stack to a side worker of their own.

pytest-xdist's `--dist loadfile` hands a worker its next module while two of its tests are still pending. A worker
with a one-test module running therefore already holds the module after it: in CI the last two long modules (a
one-minute tuner test, then a four-minute profile) both went to one worker, and the other had nothing left for
the profile's 257-315 s. Here a worker gets its next module only when it must, at the start of the last test it
holds (a worker runs a test once it knows the one after it: pytest's fixture teardown needs it).

The modules marked `copies` profile a job and take turns (the `profiling_turn` fixture): one handed to a worker
while another worker runs a profile would wait for the whole of it. Such a module is passed over while a profile
runs elsewhere, unless nothing else is left.

With three workers or more, the last one is a side worker: it takes only the modules that need no stack (units,
CLI, security, helm: ~230 worker-s of Python that ran last, on both stack workers, after their real-stack modules)
while the real-stack modules wait on Flink, and starts no stack; it waits while a profile runs (tests/conftest.py
says why) and stops when none of its modules is left. It runs at the stacks' priority: its tests hold deadlines (a
hostile input answered within 5 s), and at nice 5 one took 5.2 s beside two stacks. The stack workers take every
module in the suite's order, the stackless ones too once no real-stack module is left.

The workers tell the controller which modules are which in a file (the controller sees test ids only, never their
marks or fixtures): `announce_modules` on the workers, read once by the scheduler when it first hands out work.
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

MODULES_FILE_KEY = "chronos_module_kinds"
SIDE_WORKERS_FROM = 3  # fewer workers than this: every worker has a stack, and none is a side worker


def is_side_worker(worker_id: str, workers: int) -> bool:
    """The last of three or more workers (xdist names them gw0, gw1, ...)."""
    return workers >= SIDE_WORKERS_FROM and worker_id == f"gw{workers - 1}"


def next_module(queue: Sequence[str], exclusive: Collection[str], exclusive_elsewhere: bool,
                allowed: Collection[str] | None = None) -> str | None:
    """The first module in the suite's order that the worker may take (`allowed`: None for all), passing over an
    exclusive one while another worker holds one; None when the worker may take none of them."""
    candidates = [scope for scope in queue if allowed is None or scope in allowed]
    if exclusive_elsewhere:
        for scope in candidates:
            if scope not in exclusive:
                return scope
    return candidates[0] if candidates else None


def announce_modules(config: pytest.Config, exclusive: Collection[str], stackless: Collection[str]) -> None:
    """On a worker: the modules that take turns and the ones that need no stack, written where the controller's
    scheduler reads them."""
    path = getattr(config, "workerinput", {}).get(MODULES_FILE_KEY)
    if path is None:
        return
    partial = Path(f"{path}.{os.getpid()}")
    partial.write_text(json.dumps({"exclusive": sorted(exclusive), "stackless": sorted(stackless)}))
    partial.replace(path)  # every worker writes the same lists; a reader never sees half of one


class OneModuleAhead(LoadFileScheduling):
    """`--dist loadfile`, handing out a module only when a worker needs one, passing over an exclusive module while
    another worker holds one, and giving a side worker only the modules that need no stack."""

    def __init__(self, config: pytest.Config, modules_file: Path, log: Any = None) -> None:
        super().__init__(config, log)
        self._modules_file = modules_file
        self._kinds: tuple[frozenset[str], frozenset[str]] | None = None

    def _module_kinds(self) -> tuple[frozenset[str], frozenset[str]]:
        """(exclusive, stackless); the workers wrote them while collecting, before the first hand-out."""
        if self._kinds is None:
            try:
                kinds = json.loads(self._modules_file.read_text())
                self._kinds = frozenset(kinds["exclusive"]), frozenset(kinds["stackless"])
            except (OSError, ValueError, KeyError, TypeError):
                self._kinds = frozenset(), frozenset()
        return self._kinds

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
        exclusive, stackless = self._module_kinds()
        elsewhere = any(scope in exclusive and not all(done.values())
                        for other, work in self.assigned_work.items() if other is not node
                        for scope, done in work.items())
        side = is_side_worker(node.gateway.id, self.numnodes)
        scope = next_module(list(self.workqueue), exclusive, elsewhere, stackless if side else None)
        if scope is None:
            node.shutdown()  # a side worker with no stackless module left: what it holds, it still runs
            return
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, completed in work_unit.items() if not completed])
