"""One controller's jobs file: every job named once, found one way (a Flink job id or a FlinkDeployment), tuned by
the shared defaults with its own policy over them; anything wrong refuses the whole file in one line naming the job."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.tune.job_targets import TargetChanges, changes, job_targets, read_job_targets

A, B = "a" * 32, "b" * 32


def test_each_job_gets_the_defaults_with_its_own_policy_over_them(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("name: fleet\n")
    jobs = job_targets({"defaults": {"recovery-s": 60, "interval_max_s": 120},
                        "jobs": [{"name": "orders", "job": A, "policy": {"latency-p99-ms": 5000}},
                                 {"name": "fleet", "flink-deployment": "fleet", "namespace": "streaming",
                                  "job-file": "fleet.yaml", "policy": {"recovery_s": 30}}]}, "jobs file", tmp_path)
    orders, fleet = jobs
    assert (orders.job_id, orders.policy.recovery_s, orders.policy.latency_p99_ms) == (A, 60, 5000)
    assert orders.policy.interval_max_s == fleet.policy.interval_max_s == 120
    assert (fleet.flink_deployment, fleet.namespace, fleet.job_file) == ("fleet", "streaming", tmp_path / "fleet.yaml")
    assert fleet.policy.recovery_s == 30 and fleet.policy.latency_p99_ms is None, "its own override, no latency target"


@pytest.mark.parametrize(("jobs", "said"), [
    ([{"name": "orders", "job": A}], "job orders: invalid policy: recovery_s: Field required"),
    ([{"name": "orders", "job": A, "policy": {"recovery_s": 60}}, {"name": "orders", "job": B, "policy": {"recovery_s": 9}}],
     "job name 'orders' is given twice"),
    ([{"name": "orders", "job": A, "flink_deployment": "x"}], "exactly one of job (a Flink job id) and flink_deployment"),
    ([{"name": "orders", "job": "../etc"}], "is not a Flink job id"),
    ([{"name": "orders", "job": A, "polcy": {}}], "jobs.0.polcy: Extra inputs are not permitted"),
    ([{"name": "a b", "job": A}], "jobs.0.name"),
    ([{"name": "orders", "job": A, "policy": {"recovery_s": 60, "interval_min_s": 90, "interval_max_s": 60}}],
     "interval_min_s must be below interval_max_s"),
    ([{"name": "fleet", "flink_deployment": "fleet", "job_file": "missing.yaml", "policy": {"recovery_s": 60}}],
     "job fleet: job file"),
    ([], "jobs: List should have at least 1 item"),
    # what becomes the API server's URL path is a Kubernetes name, and numbers are bounded as the CLI bounds them
    ([{"name": "x", "flink_deployment": "../../api/v1/secrets", "policy": {"recovery_s": 60}}],
     "is not a Kubernetes object name"),
    ([{"name": "x", "flink_deployment": "fleet", "namespace": "kube-system/x", "policy": {"recovery_s": 60}}],
     "is not a Kubernetes namespace"),
    ([{"name": "x", "job": A, "policy": {"recovery_s": 1e-300}}], "recovery_s: Input should be greater than or equal to"),
    ([{"name": "x", "job": A, "policy": {"recovery_s": 60, "recovery-s": 30}}], "recovery_s is given twice"),
    ([{"name": "x", "job": A, "flink-deployment": "a", "flink_deployment": "b"}], "flink_deployment is given twice"),
])
def test_a_wrong_job_refuses_the_whole_file_in_one_line_naming_it(jobs: list[dict[str, object]], said: str,
                                                                   tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as refused:
        job_targets({"jobs": jobs}, "jobs file x.yaml", tmp_path)
    line = str(refused.value)
    assert line.startswith("jobs file x.yaml: ") and said in line and "\n" not in line


def test_the_file_is_read_as_yaml_with_job_files_beside_it(tmp_path: Path) -> None:
    (tmp_path / "orders.yaml").write_text("name: orders\n")
    path = tmp_path / "jobs.yaml"
    path.write_text(f"defaults: {{recovery_s: 60}}\njobs:\n  - {{name: orders, job: '{A}', job_file: orders.yaml}}\n")
    (orders,) = read_job_targets(path)
    assert orders.job_file == tmp_path / "orders.yaml" and orders.policy.recovery_s == 60
    path.write_text("- not a mapping\n")
    with pytest.raises(InvalidInput, match="must be a mapping"):
        read_job_targets(path)


def _two(tmp_path: Path, orders_recovery: float = 60) -> tuple:  # type: ignore[type-arg]
    return job_targets({"defaults": {"recovery_s": 60},
                        "jobs": [{"name": "orders", "job": A, "policy": {"recovery_s": orders_recovery}},
                                 {"name": "fleet", "job": B}]}, "jobs file", tmp_path)


def test_a_changed_file_touches_only_the_jobs_whose_entries_changed(tmp_path: Path) -> None:
    orders, fleet = _two(tmp_path)
    tuned = {"orders": orders, "fleet": fleet}
    assert changes((orders, fleet), tuned, {}) == TargetChanges((), ())
    retargeted, _ = _two(tmp_path, orders_recovery=30)
    assert changes((retargeted, fleet), tuned, {}) == TargetChanges((), (("orders", "its entry in the jobs file changed"),))
    assert changes((retargeted, fleet), {"fleet": fleet}, {}) == TargetChanges((retargeted,), ()), "taken up once gone"
    assert changes((fleet,), tuned, {}) == TargetChanges((), (("orders", "no longer in the jobs file"),))
    assert changes((orders, fleet), {"fleet": fleet}, {}) == TargetChanges((orders,), ())


def test_a_job_that_left_on_its_own_is_taken_up_again_only_once_its_entry_changes(tmp_path: Path) -> None:
    orders, fleet = _two(tmp_path)
    assert changes((orders, fleet), {"fleet": fleet}, {"orders": orders}) == TargetChanges((), ())
    retargeted, _ = _two(tmp_path, orders_recovery=30)
    assert changes((retargeted, fleet), {"fleet": fleet}, {"orders": orders}) == TargetChanges((retargeted,), ())
