"""Heartbeat settings (issue 18, part): chronos proposes the shortest timeout the measured pauses of the job's
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
    assert proposal.settings.heartbeat_timeout_s == 5.0 and proposal.settings.heartbeat_interval_s == 1.0
    assert proposal.settings.detection_bound_s("kill") == 2.0 < DEFAULTS.detection_bound_s("kill") == 20.0
    assert proposal.flink_config() == {"heartbeat.interval": "1000 ms", "heartbeat.timeout": "5000 ms",
                                       "heartbeat.rpc-failure-threshold": "2"}
    assert "found after ~2 s instead of 20 s" in proposal.reason


def test_a_long_gc_pause_keeps_the_timeout_at_three_times_it() -> None:
    proposal = propose_detection(PauseEvidence(longest_gc_pause_s=4.0), DEFAULTS)
    assert proposal.settings.heartbeat_timeout_s == 12.0 and proposal.timeout_floor_s == 12.0
    check_timeout(proposal.settings.heartbeat_timeout_s, PauseEvidence(4.0))


def test_a_timeout_below_the_measured_pause_is_refused_with_the_numbers() -> None:
    with pytest.raises(InvalidInput, match=r"heartbeat.timeout 6 s is below 3 x the longest pause measured on the "
                                           r"job's TaskManagers \(4 s = 12 s\)"):
        check_timeout(6.0, PauseEvidence(longest_gc_pause_s=1.0, longest_heartbeat_delay_s=4.0))


def test_a_nonsensical_request_is_one_line() -> None:
    with pytest.raises(InvalidInput, match="safety_factor >= 1"):
        propose_detection(PauseEvidence(1.0), DEFAULTS, safety_factor=0.5)
