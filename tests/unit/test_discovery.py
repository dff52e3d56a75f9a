"""Discovery on Kubernetes: every FlinkDeployment annotated `chronos/tune: "true"` is a job to tune, its targets in
further annotations over the controller's defaults; one whose annotations make no valid policy is refused in one
line naming it and the others are tuned; one that loses the annotation is let go. Against the fake operator of the
Kubernetes realizer's tests."""

from __future__ import annotations

from typing import Any

from chronos.errors import StackError
from chronos.tune.discovery import Listed, discovered, operator_rest_url
from chronos.tune.job_targets import changes
from chronos.tune.target_sources import DiscoveredTargets
from tests.support.clocks import Clock
from tests.support.fake_operator import FakeOperator

DEFAULTS = {"recovery_s": 60, "interval_max_s": 120}


def deployment(name: str, namespace: str = "streaming", **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations}}


def test_annotated_deployments_are_tuned_with_their_annotations_over_the_defaults() -> None:
    found = discovered([
        deployment("orders", **{"chronos/tune": "true", "chronos/latency-p99-ms": "5000"}),
        deployment("fleet", **{"chronos/tune": "True", "chronos/recovery_s": "30",
                               "chronos/rest-url": "http://fleet-jm.streaming:8081"}),
        deployment("billing", **{"chronos/tune": "false", "chronos/recovery-s": "30"}),
        deployment("plain"),
    ], DEFAULTS)
    assert found.refused == ()
    orders, fleet = found.targets
    assert (orders.name, orders.flink_deployment, orders.namespace) == ("streaming.orders", "orders", "streaming")
    assert (orders.policy.latency_p99_ms, orders.policy.recovery_s, orders.policy.interval_max_s) == (5000, 60, 120)
    assert orders.rest_url == operator_rest_url("orders", "streaming") == "http://orders-rest.streaming:8081"
    assert (fleet.policy.recovery_s, fleet.rest_url) == (30, "http://fleet-jm.streaming:8081")


def test_a_deployment_whose_annotations_make_no_policy_is_one_line_and_the_others_are_tuned() -> None:
    found = discovered([
        deployment("typo", **{"chronos/tune": "true", "chronos/recovery": "60"}),
        deployment("inverted", **{"chronos/tune": "true", "chronos/interval-min-s": "300"}),
        deployment("hostile", **{"chronos/tune": "true", "chronos/rest-url": "http://x/$(id)\nmore"}),
        deployment("fine", **{"chronos/tune": "true"}),
    ], DEFAULTS)
    assert [t.name for t in found.targets] == ["streaming.fine"]
    assert len(found.refused) == 3 and all("\n" not in line for line in found.refused)
    assert found.refused[0].startswith("FlinkDeployment streaming/typo: invalid policy: recovery: Extra inputs"), found
    assert found.refused[1].startswith("FlinkDeployment streaming/inverted: invalid policy: "), found
    assert "interval_min_s must be below interval_max_s" in found.refused[1]
    assert found.refused[2].startswith("FlinkDeployment streaming/hostile: ") and "$(id)" not in found.refused[2]


class Lister:
    """The fake operator's deployment, listed; `down` makes the API server unreachable."""

    def __init__(self, operator: FakeOperator) -> None:
        self.operator, self.down, self.lists = operator, False, 0

    def list(self, namespace: str) -> Listed:
        self.lists += 1
        if self.down:
            raise StackError("cannot reach Kubernetes to list FlinkDeployments in streaming (connection refused)")
        return self.operator.list(namespace)


def test_a_deployment_is_taken_up_when_annotated_and_let_go_when_it_loses_the_annotation() -> None:
    operator, clock, said = FakeOperator(), Clock(), []
    lister = Lister(operator)
    source = DiscoveredTargets(lister, ("streaming", "elsewhere"), DEFAULTS, 30, said.append, clock)
    assert source.first() == ()
    operator.resource["metadata"]["annotations"] = {"chronos/tune": "true"}
    clock.now = 10
    assert source.look(False) is None and lister.lists == 2, "listed every 30 s, not every look"
    clock.now = 31
    (target,) = source.look(False) or ()
    assert (target.name, target.flink_deployment, target.policy.recovery_s) == ("streaming.fleet", "fleet", 60)
    operator.resource["metadata"]["annotations"] = {"chronos/tune": "true", "chronos/recovery-s": "20"}
    clock.now = 62
    (changed,) = source.look(False) or ()
    assert changes((changed,), {target.name: target}, {}, source.lost, source.changed).remove == (
        ("streaming.fleet", "its FlinkDeployment's chronos annotations changed"),)
    del operator.resource["metadata"]["annotations"]["chronos/tune"]
    clock.now = 93
    assert source.look(False) == ()
    assert changes((), {changed.name: changed}, {}, source.lost, source.changed).remove == (
        ("streaming.fleet", 'its FlinkDeployment is gone or no longer annotated chronos/tune: "true"'),)


def test_an_api_server_out_of_reach_is_said_once_and_the_jobs_found_go_on() -> None:
    operator, clock, said = FakeOperator(), Clock(), []
    operator.resource["metadata"]["annotations"] = {"chronos/tune": "true", "chronos/recovery-s": "oops"}
    lister = Lister(operator)
    source = DiscoveredTargets(lister, ("streaming",), DEFAULTS, 30, said.append, clock)
    assert source.first() == ()
    assert len(said) == 1 and said[0].startswith("not tuned: FlinkDeployment streaming/fleet: invalid policy")
    clock.now = 31
    assert source.look(False) == () and len(said) == 1, "a refusal is said once, not every list"
    lister.down = True
    for now in (62, 93, 124):
        clock.now = now
        assert source.look(False) is None, "nothing changes while the API server is out of reach"
    assert said[1:] == ["cannot reach Kubernetes to list FlinkDeployments in streaming (connection refused); the "
                        "jobs found before go on until the next list"]
    lister.down = False
    clock.now = 155
    assert source.look(False) == () and said[2] == "FlinkDeployments listed again"
