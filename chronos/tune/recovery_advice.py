"""The recovery settings to propose for a cluster, and the phase model they are judged by: the use case behind
`chronos recommend`, the proposal `chronos tune` shows at start and the one a profile ends with.

Why here, over two small ports: the proposal rests on what the cluster is (its Flink version, its JobManager's
configuration, its largest state) and on how its TaskManagers pause (watched for a while), both read over Flink's
REST API by adapters (`chronos.flink.cluster_facts`, `chronos.signals.taskmanager_pauses`); the phase model rests on
every recovery chronos measured (the profiles' and the live job's), handed in as values. What is proposed is
`chronos.optimizer.recovery_proposal`'s pure rule.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from chronos.errors import InvalidInput
from chronos.optimizer.detection import PauseEvidence
from chronos.optimizer.phase_model import PhaseModel, RecoveryConditions, fit_phase_model
from chronos.optimizer.phase_observations import ProfiledRecovery, live_phase_observation, phase_observation
from chronos.optimizer.recovery_config import FlinkSettings, parse_version, recovery_settings, settings_config
from chronos.optimizer.recovery_proposal import RecoveryProposal, propose_recovery
from chronos.tune.journal import LiveRecovery


class ClusterFacts(Protocol):
    """What the proposal needs to know of the cluster (`chronos.flink.cluster_facts.RestClusterFacts`)."""

    def flink_version(self) -> str: ...
    def jobmanager_config(self) -> Mapping[str, str]: ...
    def largest_state_bytes(self) -> float: ...


class PauseWatch(Protocol):
    """TaskManager pauses sampled for `seconds` (`chronos.signals.taskmanager_pauses.watch_pauses`): the evidence and
    how many samples it rests on."""

    def __call__(self, seconds: float, heartbeat_interval_s: float,
                 progress: Callable[[float], None]) -> tuple[PauseEvidence, int]: ...


@dataclass(frozen=True)
class Proposed:
    proposal: RecoveryProposal
    lines: FlinkSettings  # the Flink configuration that puts it in force
    samples: int  # the pause samples it rests on


def propose_for_cluster(cluster: ClusterFacts, watch: PauseWatch, watch_s: float, *,
                        spare_taskmanagers: int | None, model: PhaseModel | None, spare_allowed: bool = True,
                        safety_factor: float = 3.0, min_timeout_s: float = 5.0,
                        conditions: RecoveryConditions | None = None,
                        progress: Callable[[float], None] = lambda _: None) -> Proposed:
    """The recovery settings proposed from the pauses the cluster's TaskManagers show over `watch_s` (none answered:
    InvalidInput). `spare_taskmanagers`: the local stack's spare TaskManagers (a spare there is one more process);
    None for a cluster elsewhere, whose spare is `slotmanager.redundant-taskmanager-num`."""
    version = parse_version(cluster.flink_version())
    config = dict(cluster.jobmanager_config())
    on_stack = spare_taskmanagers is not None
    current = recovery_settings(config, spare_taskmanagers or 0)
    evidence, samples = watch(watch_s, current.heartbeat_interval_s, progress)
    if samples == 0:
        raise InvalidInput("no TaskManager answered while measuring pauses: is a TaskManager registered?")
    proposal = propose_recovery(
        current, evidence, conditions or RecoveryConditions("kill", 0.0, 1.0, 0.0, cluster.largest_state_bytes()),
        spare_allowed=spare_allowed and on_stack, model=model,
        taskmanager_memory=config.get("taskmanager.memory.process.size", "a TaskManager's"),
        safety_factor=safety_factor, min_timeout_s=min_timeout_s)
    lines = settings_config(proposal.proposed, version)
    if spare_allowed and not on_stack:
        lines = lines.merged(FlinkSettings(version, (("slotmanager.redundant-taskmanager-num", "1"),)))
    return Proposed(proposal, lines, samples)


def measured_phase_model(profiled: Sequence[ProfiledRecovery],
                         live: Mapping[str, Sequence[LiveRecovery]]) -> PhaseModel | None:
    """The phase model fitted on every recovery that can explain its phases (profiling copies and chaos runs measured
    with this chronos, and the live jobs' own), each job at its own capacity (what its catch-ups measured); None when
    there is none."""
    by_job: dict[str, list[ProfiledRecovery]] = {}
    for p in profiled:
        by_job.setdefault(p.job_name, []).append(p)
    observations = []
    for job in sorted(set(by_job) | set(live)):
        measured = by_job.get(job, [])
        capacities = [c for c in [*(p.measurement.capacity for p in measured), *(r.capacity for r in live.get(job, []))]
                      if c is not None]
        capacity = statistics.median(capacities) if capacities else None
        observations += [o for p in measured
                         if (o := phase_observation(p.measurement, p.rate, p.state_bytes, capacity))]
        observations += [o for r in live.get(job, []) if (o := live_phase_observation(
            r.settings_in_force, r.interval_ms, r.rate, r.failed_ms, r.running_ms,
            None if r.recovery_s is None else r.failed_ms + round(r.recovery_s * 1000), r.catch_up_input_rate,
            capacity, r.backlog_at_restart))]
    return fit_phase_model(observations) if observations else None
