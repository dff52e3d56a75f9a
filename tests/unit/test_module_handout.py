"""The suite's two workers get whole modules in the suite's order, each only when it must have one, and a profile is
never handed to a worker that would only wait for another worker's profile (tests.support.module_scheduling).
Driven through xdist's own scheduler interface with workers of our own that only hold what they are sent."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.support.module_scheduling import OneModuleAhead, next_module


class TwoWorkerConfig:
    option = SimpleNamespace(loadscopereorder=False)

    def getvalue(self, name: str) -> object:
        return ["2*popen"] if name == "tx" else None


class HeldWorker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.held: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.held.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def handout(tmp_path: Path, tests: list[str], exclusive: set[str]) -> tuple[OneModuleAhead, HeldWorker, HeldWorker]:
    listed = tmp_path / "exclusive.json"
    listed.write_text(json.dumps(sorted(exclusive)))
    scheduler = OneModuleAhead(TwoWorkerConfig(), listed)  # type: ignore[arg-type]
    first, second = HeldWorker("gw0"), HeldWorker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, tests)
    scheduler.schedule()
    return scheduler, first, second


def modules(worker: HeldWorker, tests: list[str]) -> list[str]:
    return list(dict.fromkeys(tests[i].split("::")[0] for i in worker.held))


def test_a_worker_gets_its_next_module_only_when_its_last_held_test_would_start(tmp_path: Path) -> None:
    tests = ["a.py::t0", "a.py::t1", "a.py::t2", "b.py::t0", "c.py::t0", "d.py::t0"]
    scheduler, first, second = handout(tmp_path, tests, set())
    assert modules(first, tests) == ["a.py"], "three tests to run: nothing more yet"
    assert modules(second, tests) == ["b.py", "c.py"], "b's one test runs once the worker knows what follows it"
    scheduler.mark_test_complete(first, 0)
    assert modules(first, tests) == ["a.py"], "xdist's own would hand d out here, two tests ahead"
    scheduler.mark_test_complete(first, 1)
    assert modules(first, tests) == ["a.py", "d.py"]
    assert not scheduler.workqueue


def test_a_profile_is_passed_over_while_the_other_worker_runs_one(tmp_path: Path) -> None:
    tests = ["any_job.py::t0", "profiling.py::t0", "tune.py::t0", "chaos.py::t0"]
    _, first, second = handout(tmp_path, tests, {"any_job.py", "profiling.py"})
    assert modules(first, tests)[0] == "any_job.py"
    assert "profiling.py" not in modules(second, tests), "it would wait for any_job's whole profile"
    assert modules(second, tests) == ["tune.py", "chaos.py"]


def test_the_first_module_in_order_unless_it_is_a_profile_and_one_runs_elsewhere() -> None:
    queue = ["profiling.py", "tune.py"]
    assert next_module(queue, {"profiling.py"}, exclusive_elsewhere=False) == "profiling.py"
    assert next_module(queue, {"profiling.py"}, exclusive_elsewhere=True) == "tune.py"
    assert next_module(queue[:1], {"profiling.py"}, exclusive_elsewhere=True) == "profiling.py", "rather than nothing"
