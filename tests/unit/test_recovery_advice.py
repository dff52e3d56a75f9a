"""The recovery-settings proposal over its two ports (what the cluster is, how its TaskManagers pause), on fakes of
our own: nothing measured is one line; on the local stack a spare is a TaskManager, elsewhere it is Flink's
redundant-TaskManager setting; the pauses are watched at the cluster's own heartbeat interval."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pytest

from chronos.errors import InvalidInput
from chronos.optimizer.detection import PauseEvidence
from chronos.tune.recovery_advice import propose_for_cluster

CONFIG = {"heartbeat.interval": "10 s", "heartbeat.timeout": "50 s"}


@dataclass
class FakeCluster:
    config: Mapping[str, str] = field(default_factory=lambda: dict(CONFIG))

    def flink_version(self) -> str:
        return "2.3.0"

    def jobmanager_config(self) -> Mapping[str, str]:
        return self.config

    def largest_state_bytes(self) -> float:
        return 1e6


@dataclass
class FakeWatch:
    samples: int = 40
    asked: list[tuple[float, float]] = field(default_factory=list)

    def __call__(self, seconds: float, heartbeat_interval_s: float,
                 progress: Callable[[float], None]) -> tuple[PauseEvidence, int]:
        self.asked.append((seconds, heartbeat_interval_s))
        progress(seconds)
        return PauseEvidence(0.2, 0.5), self.samples


def test_no_taskmanager_answering_is_one_line() -> None:
    with pytest.raises(InvalidInput, match="no TaskManager answered"):
        propose_for_cluster(FakeCluster(), FakeWatch(samples=0), 3.0, spare_taskmanagers=0, model=None)


def test_the_pauses_are_watched_at_the_clusters_heartbeat_and_counted() -> None:
    watch = FakeWatch()
    proposed = propose_for_cluster(FakeCluster(), watch, 3.0, spare_taskmanagers=0, model=None)
    assert watch.asked == [(3.0, 10.0)] and proposed.samples == 40
    assert proposed.proposal.changes, "a 50 s timeout against pauses under a second: detection can be faster"
    assert any(key == "heartbeat.timeout" for key, _ in proposed.lines.values)


def test_a_spare_is_flinks_redundant_taskmanager_setting_off_the_local_stack_only() -> None:
    elsewhere = propose_for_cluster(FakeCluster(), FakeWatch(), 3.0, spare_taskmanagers=None, model=None)
    assert ("slotmanager.redundant-taskmanager-num", "1") in elsewhere.lines.values
    on_stack = propose_for_cluster(FakeCluster(), FakeWatch(), 3.0, spare_taskmanagers=0, model=None)
    assert ("slotmanager.redundant-taskmanager-num", "1") not in on_stack.lines.values
