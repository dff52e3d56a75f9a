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

With three workers or more, the last is the off-stack worker: it takes only the modules that start no real service
(no stack, no cluster, no broker of their own: unit, CLI, security and Helm tests), at the lowest CPU priority once
past the ones that time what they test (`wall_clock`, which it runs first, at the usual priority). The stack
workers mostly wait on Flink and leave a third of the two cores idle; run after them, the ~300 worker-seconds of
off-stack tests were the suite's last three minutes, two workers' worth. At nice 19 they take the CPU the stacks
leave and give it back at once (the profiles' copies run at nice 10 above them). A stack worker with no stack
module left takes off-stack ones too; the off-stack worker is let go when none is left for it.
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
OFFSTACK_NICENESS = 19  # below the profiles' copies (chronos.stack.profiling_clusters.COPY_NICENESS, 10)


def offstack_worker(workers: int) -> str | None:
    """The id of the worker that runs the off-stack modules: the last of three or more, none with fewer (two
    workers share every module, as one does alone)."""
    return f"gw{workers - 1}" if workers >= 3 else None


def lower_priority_once(config: pytest.Config) -> None:
    """On the off-stack worker, before its first test that times nothing: nice 19 for it and what it starts (an
    increment; a process can never take it back, so only once it is past the `wall_clock` modules)."""
    if config.stash.get(_LOWERED, False):
        return
    config.stash[_LOWERED] = True
    os.nice(max(0, OFFSTACK_NICENESS - os.nice(0)))


_LOWERED = pytest.StashKey[bool]()


def next_module(queue: Sequence[str], exclusive: Collection[str], exclusive_elsewhere: bool) -> str:
    """The first module in the suite's order, passing over an exclusive one while another worker holds one."""
    if exclusive_elsewhere:
        for scope in queue:
            if scope not in exclusive:
                return scope
    return queue[0]


def next_offstack_module(queue: Sequence[str], offstack: Collection[str]) -> str | None:
    """The off-stack worker's next module: the first off-stack one in the suite's order (the `wall_clock` ones are
    ordered first among them), none when none is left."""
    return next((scope for scope in queue if scope in offstack), None)


def announce_modules(config: pytest.Config, exclusive: Collection[str], offstack: Collection[str]) -> None:
    """On a worker: the modules that take turns and those the off-stack worker may take, written where the
    controller's scheduler reads them."""
    path = getattr(config, "workerinput", {}).get(EXCLUSIVE_FILE_KEY)
    if path is None:
        return
    partial = Path(f"{path}.{os.getpid()}")
    partial.write_text(json.dumps({"exclusive": sorted(exclusive), "offstack": sorted(offstack)}))
    partial.replace(path)  # every worker writes the same lists; a reader never sees half of one


class OneModuleAhead(LoadFileScheduling):
    """`--dist loadfile`, handing out a module only when a worker needs one, passing over an exclusive module
    while another worker holds one, and keeping the off-stack worker (`offstack_worker`) to off-stack modules."""

    def __init__(self, config: pytest.Config, exclusive_file: Path, log: Any = None,
                 offstack_worker: str | None = None) -> None:
        super().__init__(config, log)
        self._exclusive_file = exclusive_file
        self._listed: tuple[frozenset[str], frozenset[str]] | None = None
        self._offstack_worker = offstack_worker

    def _modules(self) -> tuple[frozenset[str], frozenset[str]]:
        """(exclusive, off-stack) modules, as the workers announced them."""
        if self._listed is None:  # the workers wrote it while collecting, before the first hand-out
            try:
                listed = json.loads(self._exclusive_file.read_text())
                self._listed = frozenset(listed["exclusive"]), frozenset(listed["offstack"])
            except (OSError, ValueError, KeyError, TypeError):
                self._listed = frozenset(), frozenset()
        return self._listed

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
        exclusive, offstack = self._modules()
        if node.gateway.id == self._offstack_worker:
            scope = next_offstack_module(list(self.workqueue), offstack)
            if scope is None:  # only modules that need a stack are left (the queue never grows): let it go, its
                node.shutdown()  # last held test runs first (a worker runs one once it knows what follows it)
                return
        else:
            elsewhere = any(scope in exclusive and not all(done.values())
                            for other, work in self.assigned_work.items() if other is not node
                            for scope, done in work.items())
            scope = next_module(list(self.workqueue), exclusive, elsewhere)
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, completed in work_unit.items() if not completed])
