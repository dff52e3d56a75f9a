"""The recovery phase model: fitted on synthetic recoveries whose phases follow known
parameters (with 3 % noise), it recovers them, and it predicts a setting it was never fitted on (leave one
setting out) within 15 %."""

from __future__ import annotations

import random

import pytest

from chronos.optimizer.phase_model import (
    GIB,
    PhaseObservation,
    PhaseParameters,
    Phases,
    RecoveryConditions,
    RecoverySettings,
    fit_phase_model,
    held_out_by_setting,
)

TRUTH = PhaseParameters(detect_floor_s=2.0, detect_base_s=0.8, detect_per_bound=0.95, reschedule_base_s=2.0,
                        reschedule_per_delay=1.0, replacement_s=9.0, restore_base_s=0.5, restore_s_per_gib=4.0,
                        catchup_base_s=1.5, catchup_per_interval=0.4, catchup_factor=1.1)
SETTINGS = [RecoverySettings(heartbeat_interval_s=i, heartbeat_timeout_s=t, rpc_failure_threshold=r,
                             restart_delay_s=d, spare_slots=s)
            for i, t, r, d, s in [(10, 50, 2, 1, False), (5, 30, 2, 1, False), (2, 10, 2, 0.5, True),
                                  (3, 15, 3, 2, False), (1, 6, 2, 0.2, True), (10, 50, 2, 5, True),
                                  (0.5, 4, 2, 0.5, False)]]


def truth(settings: RecoverySettings, conditions: RecoveryConditions, rng: random.Random) -> Phases:
    from chronos.optimizer.phase_model import PhaseModel

    exact = PhaseModel(TRUTH, 0, None).predict(settings, conditions)
    noisy = [v * (1 + rng.gauss(0, 0.03)) for v in (exact.detect_s, exact.reschedule_s, exact.restore_s)]
    spare = conditions.capacity - conditions.rate
    catchup = (TRUTH.catchup_base_s + TRUTH.catchup_per_interval * conditions.interval_s
               + TRUTH.catchup_factor * conditions.rate * (conditions.checkpoint_age_s + sum(noisy)) / spare)
    return Phases(*noisy, catchup * (1 + rng.gauss(0, 0.03)))


def synthetic(seed: int = 3) -> list[PhaseObservation]:
    rng = random.Random(seed)
    out = []
    for settings in SETTINGS:
        for _ in range(5):
            conditions = RecoveryConditions(rng.choice(("kill", "kill", "pause")), rng.uniform(500, 4000), 8000.0,
                                            rng.uniform(0.5, 30), rng.uniform(0.01, 2) * GIB, rng.uniform(1, 30))
            out.append(PhaseObservation(settings, conditions, truth(settings, conditions, rng)))
    return out


def test_the_fit_recovers_the_parameters_the_recoveries_were_made_with() -> None:
    fitted = fit_phase_model(synthetic()).parameters
    for name, expected in vars(TRUTH).items():
        assert getattr(fitted, name) == pytest.approx(expected, rel=0.15, abs=0.5), name


def test_a_setting_it_was_not_fitted_on_is_predicted_within_15_percent() -> None:
    error = held_out_by_setting(synthetic())
    assert error is not None and error < 0.15, error


def test_a_killed_taskmanager_is_found_by_failed_heartbeats_and_a_hung_one_only_by_the_timeout() -> None:
    defaults = RecoverySettings()
    assert defaults.detection_bound_s("kill") == 20 and defaults.detection_bound_s("pause") == 50
    model = fit_phase_model(synthetic())
    busy = RecoveryConditions("kill", 7000, 7500, 10, GIB)
    assert model.predict(defaults, busy).catchup_s > 10 * model.predict(defaults, busy).detect_s
    assert model.predict(defaults, RecoveryConditions("kill", 8000, 8000, 10, GIB)).catchup_s == float("inf")


def test_one_setting_gives_no_held_out_error_and_no_recoveries_no_model() -> None:
    assert held_out_by_setting([o for o in synthetic() if o.settings == SETTINGS[0]]) is None
    with pytest.raises(ValueError, match="no recoveries"):
        fit_phase_model([])


def test_a_setting_measured_at_one_value_keeps_the_priors_effect_instead_of_a_guessed_one() -> None:
    from chronos.optimizer.phase_model import PRIOR, fit_parameters

    one = [o for o in synthetic() if o.settings == SETTINGS[4] and o.conditions.fault == "kill"]  # one bound and delay
    fitted = fit_parameters(one)
    assert fitted.detect_per_bound == PRIOR.detect_per_bound and fitted.replacement_s == PRIOR.replacement_s
    assert fitted.reschedule_per_delay == PRIOR.reschedule_per_delay
    assert fitted.detect_base_s != PRIOR.detect_base_s, "the base absorbs what one setting shows"


def test_a_stored_recovery_becomes_an_observation_at_the_settings_it_was_measured_at() -> None:
    from chronos.model import FaultRecord, RecoveryMeasurement
    from chronos.optimizer.phase_observations import phase_observation

    fault = FaultRecord("kill-taskmanager", "pid 1", 100_000, 1.0)
    m = RecoveryMeasurement(fault, 2000, "WorstCase", 102_000, 106_000, 111_000, 11.0, 9000.0, 4000, 1500, 3,
                            backlog_at_restart=12_000.0, catch_up_input_rate=2000.0, capacity=6000.0, drain_rate=4000.0,
                            settings_in_force=(("heartbeat.interval", "500 ms"), ("heartbeat.timeout", "5000 ms"),
                                               ("chronos.spare-taskmanagers", "1")))
    o = phase_observation(m, rate=1800.0, state_bytes=GIB)
    assert o is not None
    assert o.settings == RecoverySettings(0.5, 5.0, 2, 1.0, spare_slots=True)
    assert o.conditions == RecoveryConditions("kill", 2000.0, 6000.0, 1.5, GIB, interval_s=2.0)
    assert o.measured == Phases(2.0, 4.0, 0.0, 5.0), "detect, failure seen -> all RUNNING, restore unsplit, catch-up"
    from dataclasses import replace

    assert phase_observation(replace(m, capacity=None), 1800.0) is None
    assert phase_observation(replace(m, recovered_ms=None, recovery_s=None), 1800.0) is None


def test_no_heartbeat_setting_finds_a_failure_sooner_than_the_floor() -> None:
    model = fit_phase_model(synthetic())
    fast = RecoverySettings(heartbeat_interval_s=0.1, heartbeat_timeout_s=2, restart_delay_s=0.5, spare_slots=True)
    conditions = RecoveryConditions("kill", 1000, 8000, 5, 0, 5)
    assert model.predict(fast, conditions).detect_s == pytest.approx(TRUTH.detect_floor_s, rel=0.15)
    assert RecoverySettings().expected_detection_s("kill") == 15.0, "(2 - 1/2) intervals of 10 s: a kill lands mid-beat"


def test_a_slow_detection_hides_the_replacement_taskmanagers_start() -> None:
    from chronos.optimizer.phase_model import PRIOR, PhaseModel

    model = PhaseModel(PRIOR, 0, None)
    conditions = RecoveryConditions("kill", 1000, 8000, 5, 0, 5)
    slow, fast = RecoverySettings(), RecoverySettings(heartbeat_interval_s=1, heartbeat_timeout_s=5)
    assert model.predict(slow, conditions).reschedule_s == PRIOR.reschedule_base_s + PRIOR.reschedule_per_delay
    waited = model.predict(fast, conditions)
    assert waited.reschedule_s == pytest.approx(PRIOR.reschedule_base_s + PRIOR.reschedule_per_delay
                                                + PRIOR.replacement_s - waited.detect_s)


def test_every_recovery_of_a_job_is_divided_by_the_jobs_capacity_not_its_own_catch_ups() -> None:
    from dataclasses import replace

    from chronos.model import FaultRecord, RecoveryMeasurement
    from chronos.optimizer.phase_observations import phase_observations

    fault = FaultRecord("kill-taskmanager", "pid 1", 100_000, 1.0)
    m = RecoveryMeasurement(fault, 2000, "WorstCase", 102_000, 106_000, 111_000, 11.0, 9000.0, 4000, 1500, 3,
                            capacity=6000.0)
    noisy = [replace(m, capacity=c) for c in (2300.0, 6000.0, 30_000.0)] + [replace(m, capacity=None)]
    observations = phase_observations([(x, 2000.0, 0.0) for x in noisy])
    assert [o.conditions.capacity for o in observations] == [6000.0] * 3, "the median; no capacity, no observation"


def test_a_live_failure_teaches_rescheduling_and_catch_up_but_never_detection() -> None:
    from chronos.optimizer.phase_model import fit_parameters
    from chronos.optimizer.phase_observations import live_phase_observation

    spare = (("heartbeat.timeout", "5s"), ("chronos.spare-taskmanagers", "1"))
    live = live_phase_observation(spare, 2000, 1500.0, failed_ms=10_000, running_ms=13_000, recovered_ms=21_000,
                                  catch_up_input_rate=2000.0, capacity=8000.0, backlog_at_restart=12_000.0)
    assert live is not None and not live.detect_measured
    assert live.measured == Phases(0.0, 3.0, 0.0, 8.0), "from when Flink saw it"
    assert live.conditions.checkpoint_age_s == 3.0, "12,000 behind at 2,000/s: 6 s of input, 3 s of it the outage"
    assert live_phase_observation(spare, 2000, 1500.0, 10_000, None, None, None, 8000.0) is None, "not recovered"
    measured = [o for o in synthetic() if o.settings == SETTINGS[2]]
    with_live = fit_parameters([*measured, live, live, live])
    alone = fit_parameters(measured)
    assert (with_live.detect_floor_s, with_live.detect_base_s) == (alone.detect_floor_s, alone.detect_base_s)
    assert with_live.reschedule_base_s != alone.reschedule_base_s, "its rescheduling (spare slots) counts"
    assert held_out_by_setting([live, *[o for o in synthetic() if o.settings == SETTINGS[0]]]) is not None
