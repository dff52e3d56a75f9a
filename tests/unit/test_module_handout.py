"""The suite's workers get whole modules in the suite's order, each only when it must have one; a profile is never
handed to a worker that would only wait for another worker's profile; and with three workers the last takes only
the modules that need no stack (tests.support.module_scheduling). Driven through xdist's own scheduler interface
with workers of our own that only hold what they are sent."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.support.module_scheduling import OneModuleAhead, is_side_worker, next_module


class WorkersConfig:
    option = SimpleNamespace(loadscopereorder=False)

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str) -> object:
        return [f"{self.workers}*popen"] if name == "tx" else None


class HeldWorker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.held: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.held.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def workers_given(tmp_path: Path, tests: list[str], exclusive: set[str], stackless: set[str],
                  count: int) -> tuple[OneModuleAhead, list[HeldWorker]]:
    listed = tmp_path / "kinds.json"
    listed.write_text(json.dumps({"exclusive": sorted(exclusive), "stackless": sorted(stackless)}))
    scheduler = OneModuleAhead(WorkersConfig(count), listed)  # type: ignore[arg-type]
    workers = [HeldWorker(f"gw{k}") for k in range(count)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, tests)
    scheduler.schedule()
    return scheduler, workers


def handout(tmp_path: Path, tests: list[str], exclusive: set[str]) -> tuple[OneModuleAhead, HeldWorker, HeldWorker]:
    scheduler, (first, second) = workers_given(tmp_path, tests, exclusive, set(), 2)
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


def test_with_three_workers_the_last_takes_only_the_stackless_modules_and_stops_when_none_is_left(tmp_path: Path) -> None:
    tests = ["any_job.py::t0", "any_job.py::t1", "any_job.py::t2", "tune.py::t0", "chaos.py::t0", "demo.py::t0",
             "unit_a.py::t0", "unit_b.py::t0"]
    scheduler, (first, second, side) = workers_given(tmp_path, tests, set(), {"unit_a.py", "unit_b.py"}, 3)
    assert modules(first, tests) == ["any_job.py"] and modules(second, tests) == ["tune.py", "chaos.py"]
    assert modules(side, tests) == ["unit_a.py", "unit_b.py"], "the real-stack modules stay with the stack workers"
    scheduler.mark_test_complete(side, tests.index("unit_a.py::t0"))
    assert side.shutting_down and "demo.py" not in modules(side, tests), "nothing left it may take, though demo waits"
    assert not first.shutting_down and not second.shutting_down


def test_a_side_worker_with_no_stackless_module_stops_at_once_and_the_stack_workers_take_them_once_alone(
        tmp_path: Path) -> None:
    tests = ["any_job.py::t0", "tune.py::t0", "unit_a.py::t0"]
    _, (first, second, side) = workers_given(tmp_path, tests, set(), set(), 3)
    assert side.shutting_down and not side.held
    assert sorted(modules(first, tests) + modules(second, tests)) == ["any_job.py", "tune.py", "unit_a.py"]


def test_the_side_worker_is_the_last_of_three_or_more() -> None:
    assert [is_side_worker(f"gw{k}", 3) for k in range(3)] == [False, False, True]
    assert not any(is_side_worker(f"gw{k}", 2) for k in range(2)), "two workers: both have a stack"
    assert next_module(["a.py", "u.py"], set(), False, allowed={"u.py"}) == "u.py"
    assert next_module(["a.py"], set(), False, allowed={"u.py"}) is None
