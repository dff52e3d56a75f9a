"""Experiment files: parsing with one-line errors, probes, and the runner on a fake world."""

from pathlib import Path

import pytest

from chronos.chaos.experiment import Probe, check_probe, load_experiment
from chronos.chaos.experiment_runner import run_experiment
from chronos.errors import InvalidInput
from chronos.model import DeliveryCheck, SignalSample
from tests.support.chaos_world import World

GOOD = """
title: TaskManager loss at the worst moment
steady-state-hypothesis:
  title: QoS holds
  window-s: 20
  probes:
    - {name: latency, signal: p99_ms, max: 5000}
    - {name: throughput near the load, signal: throughput, around: 1000, tolerance-pct: 20}
method:
  - fault: kill-taskmanager
    when: {strategy: worst-case, before-s: 3}
rollbacks: [restart-taskmanagers]
"""


def _file(tmp_path: Path, text: str, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_file_parses_into_typed_models(tmp_path: Path) -> None:
    exp = load_experiment(_file(tmp_path, GOOD))
    assert exp.steady_state_hypothesis.window_s == 20
    assert exp.method[0].when.strategy_object().__class__.__name__ == "WorstCase"
    assert exp.rollbacks == ("restart-taskmanagers",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("title: x\n", "steady-state-hypothesis: Field required"),
        (GOOD.replace("kill-taskmanager", "kill-everything"), "method.0.fault"),
        (GOOD.replace("max: 5000", "maxx: 5000"), "steady-state-hypothesis.probes.0"),
        (GOOD.replace("window-s: 20", "window-s: -1"), "window-s: Input should be greater than or equal to 1"),
        # bounded as a user means them: no window, wait or pause past an hour, no MTBF under a second, no probe that
        # nothing could pass
        (GOOD.replace("window-s: 20", "window-s: 1.0e200"), "window-s: Input should be less than or equal to 3600"),
        (GOOD.replace("before-s: 3", "before-s: 1.0e-200"), "before-s: Input should be greater than or equal to 0.1"),
        (GOOD.replace("{strategy: worst-case, before-s: 3}", "{strategy: random, mtbf-s: 1.0e-300}"),
         "mtbf-s: Input should be greater than or equal to 1"),
        (GOOD.replace("max: 5000", "min: 10, max: 5"), "min 10 is above max 5: no value could pass"),
        (GOOD + "load: {rate: 100, vehicles: 1000000000000}\n", "load.vehicles: Input should be less than or equal"),
        ("title: [unclosed\n", "not valid YAML"),
        ("- just a list\n", "an experiment is a mapping"),
    ],
)
def test_invalid_files_get_one_line_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as info:
        load_experiment(_file(tmp_path, text))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_missing_file_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read experiment"):
        load_experiment(tmp_path / "nope.yaml")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        load_experiment(_file(tmp_path, "{", "exp.json"))


def test_probes_judge_latency_by_max_and_throughput_by_median() -> None:
    samples = [SignalSample(i, True, throughput=900 + i, p99_ms=100.0 * i) for i in range(10)]
    assert not check_probe(Probe(name="l", signal="p99_ms", max=500), samples).ok
    assert check_probe(Probe(name="t", signal="throughput", around=1000), samples).ok
    assert not check_probe(Probe(name="t", signal="throughput", around=1000, **{"tolerance-pct": 5}), samples).ok
    missing = check_probe(Probe(name="lag", signal="lag", max=1), samples)
    assert not missing.ok and "no lag reading" in missing.detail


class FakeLoad:
    """Records what the runner asked of the experiment's load, and answers with a given check."""

    def __init__(self, log: list[str], check: DeliveryCheck) -> None:
        self.log, self.check = log, check

    def start(self) -> None:
        self.log.append("load-start")

    def finish(self, timeout_s: float) -> DeliveryCheck:
        self.log.append(f"finish {timeout_s:g}")
        return self.check

    def close(self) -> None:
        self.log.append("close")


HELD = DeliveryCheck.compare({"x-1": 5, "x-2": 7}, {"x-1": 5, "x-2": 7})
LOST = DeliveryCheck.compare({"x-1": 5, "x-2": 7}, {"x-1": 3, "x-2": 7})
WITH_LOAD = GOOD.replace("steady-state-hypothesis:",
                         "load: {rate: 1000, vehicles: 50, verify-timeout-s: 90}\nsteady-state-hypothesis:")


def _run(tmp_path: Path, text: str, load: FakeLoad | None = None, log: list[str] | None = None):  # type: ignore[no-untyped-def]
    world, rolled = World(), log if log is not None else []
    result = run_experiment(load_experiment(_file(tmp_path, text)), world, {"kill-taskmanager": lambda a: world},
                            {"restart-taskmanagers": lambda: rolled.append("restart")}, load, hold_s=15, timeout_s=120,
                            wall_ms=world.wall_ms, sleep=world.sleep)
    return result, world, rolled


def test_a_failing_hypothesis_stops_before_injecting_and_rollbacks_still_run(tmp_path: Path) -> None:
    result, world, rolled = _run(tmp_path, GOOD.replace("max: 5000", "max: 1"))
    assert result.status == "aborted" and world.fault_ms is None and result.measurements == ()
    assert rolled == ["restart"]
    assert [e.kind for e in result.journal][-3:] == ["abort", "rollback", "end"]


def test_a_passing_experiment_measures_each_fault_and_checks_again(tmp_path: Path) -> None:
    result, world, rolled = _run(tmp_path, GOOD)
    assert result.status == "completed" and world.fault_ms is not None
    assert len(result.measurements) == 1 and result.measurements[0].recovery_s is not None
    assert result.after is not None and result.after.ok and rolled == ["restart"]


def test_the_shipped_example_experiment_is_valid() -> None:
    example = Path(__file__).parents[2] / "chaos" / "experiments" / "taskmanager-loss.yaml"
    exp = load_experiment(example)
    assert len(exp.method) == 2 and exp.steady_state_hypothesis.window_s == 30
    assert exp.load is not None and exp.load.rate == 2000


def test_delivery_compares_per_key_and_counts_lost_and_duplicated_events() -> None:
    check = DeliveryCheck.compare({"a": 10, "b": 5, "c": 1}, {"a": 10, "b": 7, "d": 2})
    assert not check.ok
    assert (check.keys, check.input_events, check.output_events) == (4, 16, 19)
    assert (check.lost, check.keys_short) == (1, 1), "c lost its one event"
    assert (check.duplicated, check.keys_over) == (4, 2), "b twice too many, d never sent"
    assert ("b", 5, 7) in check.examples
    assert "VIOLATED" in check.summary()
    assert HELD.ok and "exactly-once held" in HELD.summary() and HELD.input_events == 12


def test_the_experiments_own_load_runs_from_before_the_hypothesis_until_after_the_rollbacks(tmp_path: Path) -> None:
    log: list[str] = []
    result, _, _ = _run(tmp_path, WITH_LOAD, FakeLoad(log, HELD), log)
    assert log == ["load-start", "restart", "finish 90", "close"]
    assert result.status == "completed" and result.delivery == HELD
    kinds = [e.kind for e in result.journal]
    assert kinds[:2] == ["start", "load"] and kinds[-3:] == ["verify", "exactly-once", "end"]


def test_lost_events_make_a_passing_experiment_deviate(tmp_path: Path) -> None:
    result, _, _ = _run(tmp_path, WITH_LOAD, FakeLoad([], LOST))
    assert result.after is not None and result.after.ok
    assert result.status == "deviated" and result.delivery is not None and result.delivery.lost == 2


def test_an_aborted_experiment_still_checks_its_load(tmp_path: Path) -> None:
    log: list[str] = []
    result, _, _ = _run(tmp_path, WITH_LOAD.replace("max: 5000", "max: 1"), FakeLoad(log, HELD), log)
    assert result.status == "aborted" and result.delivery == HELD and log[-2:] == ["finish 90", "close"]


def test_without_a_load_section_there_is_no_delivery_check(tmp_path: Path) -> None:
    result, _, _ = _run(tmp_path, GOOD, FakeLoad([], LOST))
    assert result.delivery is None and result.status == "completed"


def test_a_load_needs_a_positive_rate(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"load\.rate"):
        load_experiment(_file(tmp_path, WITH_LOAD.replace("rate: 1000", "rate: 0")))
