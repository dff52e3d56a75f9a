"""The recovery settings chronos applies: checked against the Flink version that reads them (one line naming a
key it does not know), values in Flink's own syntax, and read back as what the phase model reasons with."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.optimizer.phase_model import RecoverySettings
from chronos.optimizer.recovery_config import (
    duration_s,
    parse_assignments,
    parse_version,
    recovery_settings,
    settings_config,
)

FLINK_2_3 = (2, 3)


def test_settings_are_checked_and_kept_in_order_with_the_last_value_of_a_key_winning() -> None:
    checked = parse_assignments(["heartbeat.timeout=5 s", "heartbeat.interval: 1s", "heartbeat.timeout=6s",
                                 "execution.state-recovery.from-local=TRUE"], FLINK_2_3)
    assert checked.values == (("heartbeat.timeout", "6s"), ("heartbeat.interval", "1s"),
                              ("execution.state-recovery.from-local", "true"))
    assert checked.lines()[0] == "heartbeat.timeout: 6s"
    assert checked.of_scope("job").as_dict() == {"execution.state-recovery.from-local": "true"}


@pytest.mark.parametrize(("text", "says"), [
    ("heartbeat.timout=5s", "unknown setting 'heartbeat.timout'"),
    ("state.backend.local-recovery=true", "Flink 2.3 does not know the setting 'state.backend.local-recovery' "
                                          "(gone in 2.0; it is 'execution.state-recovery.from-local' now)"),
    ("heartbeat.timeout=5 fortnights", "heartbeat.timeout: '5 fortnights' is not a Flink duration"),
    ("heartbeat.timeout=0s", "must be longer than 0"),
    ("heartbeat.rpc-failure-threshold=two", "is not a whole number"),
    ("restart-strategy.type=sometimes", "is not one of fixed-delay"),
    ("heartbeat.timeout", "expected key=value"),
])
def test_a_setting_flink_would_ignore_or_choke_on_is_refused_in_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_assignments([text], FLINK_2_3)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_an_older_flink_is_told_apart_from_a_newer_one() -> None:
    assert parse_assignments(["state.backend.local-recovery=true"], (1, 20)).values
    with pytest.raises(InvalidInput, match=r"Flink 1\.20 does not know the setting 'execution\.state-recovery"):
        parse_assignments(["execution.state-recovery.from-local=true"], (1, 20))
    with pytest.raises(InvalidInput, match=r"came in 1\.14"):
        parse_assignments(["heartbeat.rpc-failure-threshold=2"], (1, 13))
    assert parse_version("2.3.0") == (2, 3) and parse_version("1.20-SNAPSHOT") == (1, 20)


@pytest.mark.parametrize(("text", "seconds"), [("500", 0.5), ("500 ms", 0.5), ("5s", 5.0), ("5 s", 5.0),
                                               ("2 min", 120.0), ("1h", 3600.0)])
def test_durations_read_as_flink_reads_them(text: str, seconds: float) -> None:
    assert duration_s("k", text) == seconds


def test_the_config_in_force_is_read_back_as_the_phase_models_settings_and_written_again() -> None:
    config = {"heartbeat.interval": "1 s", "heartbeat.timeout": "5 s", "heartbeat.rpc-failure-threshold": "3",
              "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "500 ms"}
    settings = recovery_settings(config, spare_taskmanagers=1)
    assert settings == RecoverySettings(1.0, 5.0, 3, 0.5, spare_slots=True, restart_strategy="fixed-delay")
    assert recovery_settings({}) == RecoverySettings(), "what is not set keeps Flink's defaults"
    assert recovery_settings({"slotmanager.redundant-taskmanager-num": "1"}).spare_slots
    assert recovery_settings(settings_config(settings, FLINK_2_3).as_dict(), 1) == settings


@pytest.mark.parametrize("command", [["stack", "reconfigure"], ["stack", "up"]])
def test_the_cli_refuses_a_key_this_flink_does_not_know_in_one_line_before_touching_anything(
    command: list[str], tmp_path: Path
) -> None:
    from tests.support.cli import assert_one_line_error, chronos

    done = chronos(*command, "--set", "state.backend.local-recovery=true", "--stack-dir", str(tmp_path))
    assert_one_line_error(done, "Flink 2.3 does not know the setting 'state.backend.local-recovery'",
                          "execution.state-recovery.from-local")
    assert not (tmp_path / "stack.json").exists()


def test_what_is_in_force_is_read_off_the_whole_cluster_configuration() -> None:
    from chronos.optimizer.recovery_config import in_force

    config = {"heartbeat.timeout": "5000 ms", "restart-strategy.fixed-delay.delay": "2 s", "rest.port": "8081",
              "taskmanager.numberOfTaskSlots": "4", "restart-strategy.type": "fixed-delay"}
    assert in_force(config, spare_taskmanagers=1) == (("heartbeat.timeout", "5000 ms"),
                                                      ("restart-strategy.fixed-delay.delay", "2 s"),
                                                      ("restart-strategy.type", "fixed-delay"),
                                                      ("chronos.spare-taskmanagers", "1"))
    assert recovery_settings(dict(in_force(config))).restart_delay_s == 2.0, "the cluster's own delay, not 1 s"


def test_the_restart_delay_is_read_and_written_under_the_key_of_the_strategy_in_force() -> None:
    ignored = recovery_settings({"restart-strategy.fixed-delay.delay": "500 ms"})
    assert ignored.restart_strategy == "exponential-delay" and ignored.restart_delay_s == 1.0, \
        "Flink's default strategy with checkpointing reads only its initial backoff"
    backoff = recovery_settings({"restart-strategy.exponential-delay.initial-backoff": "250 ms"})
    assert backoff.restart_delay_s == 0.25
    written = settings_config(backoff, FLINK_2_3).as_dict()
    assert written["restart-strategy.exponential-delay.initial-backoff"] == "250 ms"
    assert "restart-strategy.fixed-delay.delay" not in written


def test_task_local_recovery_is_read_and_written_under_this_flinks_name_for_it() -> None:
    local = recovery_settings({"execution.state-recovery.from-local": "true"})
    assert local.local_recovery and not recovery_settings({}).local_recovery
    assert settings_config(local, FLINK_2_3).as_dict()["execution.state-recovery.from-local"] == "true"
    assert settings_config(local, (1, 20)).as_dict()["state.backend.local-recovery"] == "true"
