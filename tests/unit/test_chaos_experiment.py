"""Experiment files: parsing with one-line errors, probes, and the runner on a fake world."""

from pathlib import Path

import pytest

from chronos.chaos.experiment import Probe, check_probe, load_experiment
from chronos.chaos.experiment_runner import run_experiment
from chronos.errors import InvalidInput
from chronos.model import SignalSample
from tests.unit.test_chaos_measure import World

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
        (GOOD.replace("window-s: 20", "window-s: -1"), "window-s: Input should be greater than 0"),
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


def _run(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    world, rolled = World(), []
    result = run_experiment(load_experiment(_file(tmp_path, text)), world, {"kill-taskmanager": lambda a: world},
                            {"restart-taskmanagers": lambda: rolled.append("restart")}, hold_s=15, timeout_s=120,
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
