"""Heartbeat settings: chronos proposes the shortest timeout the measured pauses of the job's
TaskManagers allow (never below 3x the longest), finds a killed TaskManager sooner through failed heartbeat RPCs,
and refuses, with the numbers, a timeout that a measured pause would trip."""

from __future__ import annotations

import pytest

from chronos.errors import InvalidInput
from chronos.optimizer.detection import PauseEvidence, check_timeout, propose_detection
from chronos.optimizer.phase_model import RecoverySettings

DEFAULTS = RecoverySettings()  # Flink's: 10 s interval, 50 s timeout, 2 failed RPCs


def test_short_pauses_allow_a_short_timeout_and_a_kill_is_found_in_a_fraction_of_the_default_time() -> None:
    proposal = propose_detection(PauseEvidence(longest_gc_pause_s=0.4, longest_heartbeat_delay_s=0.9), DEFAULTS)
    assert proposal.settings.heartbeat_timeout_s == 5.0 and proposal.settings.heartbeat_interval_s == 0.5
    assert proposal.settings.detection_bound_s("kill") == 1.0 < DEFAULTS.detection_bound_s("kill") == 20.0
    assert proposal.flink_config() == {"heartbeat.interval": "500 ms", "heartbeat.timeout": "5000 ms",
                                       "heartbeat.rpc-failure-threshold": "2"}
    assert "found after ~1 s instead of 20 s" in proposal.reason


def test_a_long_gc_pause_keeps_the_timeout_at_three_times_it() -> None:
    proposal = propose_detection(PauseEvidence(longest_gc_pause_s=4.0), DEFAULTS)
    assert proposal.settings.heartbeat_timeout_s == 12.0 and proposal.timeout_floor_s == 12.0
    check_timeout(proposal.settings.heartbeat_timeout_s, PauseEvidence(4.0))


def test_a_timeout_below_the_measured_pause_is_refused_with_the_numbers() -> None:
    with pytest.raises(InvalidInput, match=r"heartbeat.timeout 6 s is below 3 x the longest pause measured on the "
                                           r"job's TaskManagers \(3 x 4 s = 12 s\)"):
        check_timeout(6.0, PauseEvidence(longest_gc_pause_s=1.0, longest_heartbeat_delay_s=4.0))


def test_a_nonsensical_request_is_one_line() -> None:
    with pytest.raises(InvalidInput, match="safety_factor >= 1"):
        propose_detection(PauseEvidence(1.0), DEFAULTS, safety_factor=0.5)


def test_pauses_are_read_off_gc_counters_and_heartbeat_times_per_taskmanager() -> None:
    from chronos.optimizer.detection import PauseSample, evidence_from

    t = 1_764_800_000_000  # epoch ms, as Flink reports when it last heard each TaskManager
    samples = [
        PauseSample("tm-a", t, 10, 400, t), PauseSample("tm-a", t + 500, 10, 400, t),
        PauseSample("tm-a", t + 1000, 11, 650, t + 1000),  # one collection of 250 ms
        PauseSample("tm-a", t + 1500, 14, 950, t + 1000),  # three collections, 300 ms in all: <= 300 ms each
        *(PauseSample("tm-a", t + ms, 14, 950, t + ms - 100) for ms in (2100, 3100, 4100, 5000)),  # on time
        PauseSample("tm-b", t, 3, 100, t), PauseSample("tm-b", t + 1000, 3, 100, t + 2400),  # 2.4 s apart: 1.4 s late
        PauseSample("tm-b", t + 5000, 3, 100, t + 2400),  # silent 2.6 s at the last sample: 1.6 s late
    ]
    evidence = evidence_from(samples, heartbeat_interval_s=1.0)
    assert evidence.longest_gc_pause_s == 0.3
    assert evidence.longest_heartbeat_delay_s == 1.6 and evidence.longest_s == 1.6
    assert evidence_from([], 1.0) == PauseEvidence(0.0, 0.0)
    registering = PauseSample("tm-new", t + 5000, 0, 0, 0)  # never heard yet: Flink says 0
    dead = [PauseSample("tm-dead", t, 1, 10, t), PauseSample("tm-dead", t + 3000, 1, 10, t)]  # then let go
    assert evidence_from([*samples, registering, *dead], 1.0) == evidence, "neither is a pause"


def test_the_proposal_shows_each_settings_predicted_effect_and_cost() -> None:
    from chronos.optimizer.phase_model import RecoveryConditions
    from chronos.optimizer.recovery_proposal import propose_recovery

    current = RecoverySettings(restart_delay_s=2.0)
    proposal = propose_recovery(current, PauseEvidence(0.2, 0.5), RecoveryConditions("kill", 0, 1, 0, 0),
                                spare_allowed=True, taskmanager_memory="1536m")
    assert proposal.proposed == RecoverySettings(0.5, 5.0, 2, 0.5, spare_slots=True)
    assert [c.what for c in proposal.changes] == ["heartbeat", "restart delay", "spare TaskManager"]
    assert "1536m of memory" in proposal.changes[2].cost and "fails the job over" in proposal.changes[0].cost
    kill, pause, _ = proposal.forecasts
    assert kill.proposed.detect_s < kill.now.detect_s and kill.proposed.reschedule_s < kill.now.reschedule_s
    assert pause.proposed.detect_s == 6.25 and pause.now.detect_s == 46.5, "a hung one only at the timeout (- half a beat)"
    assert proposal.model == "prior"
    held_back = propose_recovery(current, PauseEvidence(4.0), RecoveryConditions("kill", 0, 1, 0, 0),
                                 spare_allowed=False, taskmanager_memory="1536m")
    assert held_back.proposed.heartbeat_timeout_s == 12.0 and not held_back.proposed.spare_slots


def test_the_tuner_shows_the_proposal_and_its_predicted_effect_as_an_event_and_a_metric(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from prometheus_client import CollectorRegistry
    from rich.console import Console

    from chronos.cli.tune_view import TuneDisplay, TuneObservers
    from chronos.metrics.exporter import TuneMetrics
    from chronos.metrics.tune_observer import MetricsObserver
    from chronos.model import CheckpointSettings, JobSpec
    from chronos.optimizer.phase_model import RecoveryConditions
    from chronos.optimizer.recovery_proposal import propose_recovery
    from chronos.tune.retune import TunedJob

    registry = CollectorRegistry()
    display = TuneObservers(TuneDisplay(Console(), as_json=True), MetricsObserver(TuneMetrics(registry)))
    job = TunedJob("j1", JobSpec("fleet"), CheckpointSettings(10_000))
    proposal = propose_recovery(RecoverySettings(restart_delay_s=2.0), PauseEvidence(0.2, 0.5),
                                RecoveryConditions("kill", 0, 1, 0, 0), spare_allowed=True, taskmanager_memory="1g")
    display.recovery_proposal(job, proposal, ["heartbeat.timeout: 5000 ms"], "chronos recommend --apply")
    event = json.loads(capsys.readouterr().out)
    assert event["event"] == "recovery_proposal" and event["apply"] == "chronos recommend --apply"
    assert event["flink_config"] == ["heartbeat.timeout: 5000 ms"] and event["spare_taskmanagers"] == 1
    now = registry.get_sample_value("chronos_recovery_forecast_seconds",
                                    {"job_name": "fleet", "settings": "now", "fault": "kill"})
    proposed = registry.get_sample_value("chronos_recovery_forecast_seconds",
                                         {"job_name": "fleet", "settings": "proposed", "fault": "kill"})
    assert now is not None and proposed is not None and proposed < now / 2
    assert f"{now:.0f} s now" in event["text"] and "heartbeat" in event["text"]


def test_task_local_recovery_is_proposed_once_the_state_is_large_enough_to_matter_with_its_disk_cost() -> None:
    from chronos.optimizer.phase_model import GIB, RecoveryConditions
    from chronos.optimizer.recovery_proposal import propose_recovery

    def proposal(state_bytes: float):  # type: ignore[no-untyped-def]
        return propose_recovery(RecoverySettings(), PauseEvidence(0.1, 0.1), RecoveryConditions("kill", 0, 1, 0, state_bytes),
                                spare_allowed=False, taskmanager_memory="1g")

    small, large = proposal(1024.0), proposal(2 * GIB)
    assert not small.proposed.local_recovery and "task-local recovery" not in [c.what for c in small.changes]
    change = next(c for c in large.changes if c.what == "task-local recovery")
    assert large.proposed.local_recovery and "2,048 MiB" in change.cost and "lost with it" in change.why
    kill, _, task = large.forecasts
    assert task.proposed.restore_s < task.now.restore_s / 2, "a task failure restores from local disk"
    assert kill.proposed.restore_s == kill.now.restore_s, "a killed TaskManager's copy is gone: no gain"
    assert task.now.detect_s < kill.now.detect_s, "a failing task reports itself"
    assert kill.proposed.reschedule_s > task.proposed.reschedule_s, "found sooner, a kill waits for its replacement"
