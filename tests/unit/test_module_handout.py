"""The suite's workers get whole modules in the suite's order, each only when it must have one; a profile is never
handed to a worker that would only wait for another worker's profile; with three, the third runs only the modules
that start no service (tests.support.module_scheduling).
Driven through xdist's own scheduler interface with workers of our own that only hold what they are sent."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from types import SimpleNamespace

from tests.support.module_scheduling import OneModuleAhead, next_module, offstack_worker


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


def handout(tmp_path: Path, tests: list[str], exclusive: set[str]) -> tuple[OneModuleAhead, HeldWorker, HeldWorker]:
    scheduler, (first, second) = workers_given(tmp_path, tests, 2, exclusive=exclusive)
    return scheduler, first, second


def workers_given(tmp_path: Path, tests: list[str], count: int, exclusive: Collection[str] = (),
                  offstack: Collection[str] = ()) -> tuple[OneModuleAhead, list[HeldWorker]]:
    listed = tmp_path / "modules.json"
    listed.write_text(json.dumps({"exclusive": sorted(exclusive), "offstack": sorted(offstack)}))
    scheduler = OneModuleAhead(WorkersConfig(count), listed,  # type: ignore[arg-type]
                               offstack_worker=offstack_worker(count))
    workers = [HeldWorker(f"gw{n}") for n in range(count)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, tests)
    scheduler.schedule()
    return scheduler, workers


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


def test_with_three_workers_the_third_runs_only_modules_that_start_no_service_and_goes_when_none_is_left(
        tmp_path: Path) -> None:
    tests = ["any_job.py::t0", "any_job.py::t1", "tune.py::t0", "tune.py::t1", "lifecycle.py::t0",
             "unit_timed.py::t0", "unit_a.py::t0", "unit_b.py::t0"]
    scheduler, (first, second, third) = workers_given(tmp_path, tests, 3,
                                                      offstack={"unit_timed.py", "unit_a.py", "unit_b.py"})
    assert modules(first, tests) == ["any_job.py"] and modules(second, tests) == ["tune.py"]
    assert modules(third, tests) == ["unit_timed.py", "unit_a.py"], "off-stack modules in the suite's order"
    scheduler.mark_test_complete(third, tests.index("unit_timed.py::t0"))
    assert modules(third, tests) == ["unit_timed.py", "unit_a.py", "unit_b.py"]
    assert list(scheduler.workqueue) == ["lifecycle.py"], "a module that starts a stack waits for a stack worker"
    scheduler.mark_test_complete(third, tests.index("unit_a.py::t0"))
    assert third.shutting_down and "lifecycle.py" not in modules(third, tests)
    scheduler.mark_test_complete(second, tests.index("tune.py::t0"))
    assert modules(second, tests) == ["tune.py", "lifecycle.py"]


def test_a_stack_worker_with_no_stack_module_left_takes_off_stack_ones_too(tmp_path: Path) -> None:
    tests = ["tune.py::t0", "unit_a.py::t0", "unit_a.py::t1", "unit_b.py::t0", "unit_c.py::t0"]
    scheduler, (first, second, third) = workers_given(tmp_path, tests, 3,
                                                      offstack={"unit_a.py", "unit_b.py", "unit_c.py"})
    assert modules(first, tests) == ["tune.py", "unit_c.py"] and modules(second, tests) == ["unit_a.py"]
    assert modules(third, tests) == ["unit_b.py"] and third.shutting_down, "its last test runs, then it goes"
    assert not scheduler.workqueue


def test_only_three_workers_or_more_have_an_off_stack_one() -> None:
    assert [offstack_worker(n) for n in (1, 2, 3, 4)] == [None, None, "gw2", "gw3"]
