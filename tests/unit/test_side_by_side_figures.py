"""The side-by-side's figures, from what an arm records: the table the issue asks for and its verdict."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

import pytest

from chronos.benchmarks.side_by_side import (
    ArmFigures,
    ArmRecord,
    SavedRun,
    Scenario,
    busy_scenario,
    frontier_at,
    merge_runs,
    scenario,
    summarise,
    table,
    verdict,
)
from chronos.model import DeliveryCheck

SC = Scenario(600, 1500, 90, 4000, 2000, 300, (200.0,), 25, 45, 20, 120, 120, 45)
START = 1_000_000


def reading(t: float, interval_s: float, *, late: float = 0.0, throughput: float = 3000.0) -> dict[str, Any]:
    return {"event": "reading", "at_ms": START + int(t * 1000), "interval_s": interval_s, "input_rate": 3000.0,
            "throughput": throughput, "staleness_ms": 9000.0, "latency_violation_s": late, "recovery_violation_s": 0.0}


def arm(name: str, *, late_s: float, recovery_s: float | None, checkpoints: tuple[float, ...] = (0.5,) * 10,
        lost: int = 0) -> ArmRecord:
    injected = START + 200_000
    failure = {"event": "failure", "failed_ms": injected + 3000, "interval_ms": 30_000, "rate": 4000.0,
               "recovery_s": None if recovery_s is None else recovery_s - 3}
    events = (*(reading(t, 30, late=2.0 if t < late_s else 0.0) for t in range(0, 600, 2)), failure,
              {"event": "summary", "latency_violation_s": late_s, "recovery_violation_s": 0.0})
    return ArmRecord(name, START, events, (injected,), checkpoints, lost, 0, 9000)


def test_a_recovery_is_timed_from_the_kill_and_counted_beyond_the_target() -> None:
    figures = summarise(arm("static-30", late_s=40, recovery_s=60.0), SC)
    (recovery,) = figures.recoveries
    assert recovery.from_fault_s == 60.0 and recovery.from_flink_s == 57.0
    assert figures.recovery_violation_s == 15.0 and figures.over_target == 1
    assert figures.latency_violation_s == 40 and figures.mean_throughput == figures.mean_input_rate == 3000.0
    assert figures.latency_violation_in_recovery_s == 0, "late only in the first 40 s, long before the kill"
    assert figures.checkpoint_share == 5 / 600


def test_latency_violation_is_split_into_the_seconds_a_failure_caused_and_the_rest() -> None:
    """Late in every reading up to 230 s; killed at 200 s, recovered 60 s later: 30 s of it were the failure's."""
    figures = summarise(arm("static-30", late_s=231, recovery_s=60.0), SC)
    assert figures.latency_violation_in_recovery_s == 30


def test_a_recovery_never_seen_counts_until_the_arm_ends() -> None:
    figures = summarise(arm("static-10", late_s=0, recovery_s=None), SC)
    assert figures.unrecovered == 1 and figures.over_target == 1
    assert figures.recovery_violation_s == 600 - 200 - 45
    assert figures.mean_recovery_s is None


def test_the_table_puts_overhead_and_throughput_against_the_longest_static_interval() -> None:
    rows = table([summarise(arm("static-60", late_s=300, recovery_s=40.0, checkpoints=(0.5,) * 10), SC),
                  summarise(arm("chronos", late_s=20, recovery_s=40.0, checkpoints=(0.5,) * 40), SC)], "static-60")
    assert rows[0]["overhead_vs_base_pct"] == 0 and rows[1]["overhead_vs_base_pct"] == round(100 * 15 / 600, 2)
    assert rows[1]["qos_violation_s"] == 20 and rows[1]["recoveries_over_target"] == "0/1"
    assert rows[1]["reread_pct"] == 0, "read what arrived, nothing replayed"


def qos(name: str, seconds: float, share: float = 0.01, lost: int = 0) -> ArmFigures:
    base = summarise(arm(name, late_s=0, recovery_s=30.0, lost=lost), SC)
    return replace(base, latency_violation_s=seconds, checkpoint_share=share)


def test_busy_wants_half_the_violations_of_the_best_static_that_checkpoints_no_more_and_of_young_daly() -> None:
    arms = [qos("static-10", 100, 0.03), qos("static-20", 70, 0.02), qos("static-60", 300, 0.005),
            qos("young-daly", 90, 0.02), qos("khaos", 80, 0.01), qos("chronos", 30, 0.02)]
    lines = verdict(arms, "busy")
    assert lines[0].startswith("MET") and "(static-20, read at 2.00%)" in lines[0], "static-10 checkpoints more"
    assert lines[1].startswith("MET") and "Young/Daly" in lines[1]
    assert lines[2].startswith("MET") and lines[3].startswith("NOTE") and lines[4].startswith("MET")
    cheap = verdict([*arms[:5], qos("chronos", 200, 0.01)], "busy")
    assert cheap[0].startswith("NOT MET") and "the line from static-60 to static-20" in cheap[0], cheap[0]
    assert "vs 223 s" in cheap[0], "a third of the way from static-60 (0.5 %, 300 s) to static-20 (2 %, 70 s)"
    thrifty = verdict([*arms[:5], qos("chronos", 10, 0.001)], "busy")
    assert thrifty[0].startswith("NOT MET") and "frontier cannot be read" in thrifty[0], "said, not guessed"


def test_the_best_chronos_arm_is_the_contender_and_the_settings_arm_answers_for_recovery() -> None:
    settings = replace(qos("chronos-settings", 20, 0.02), recoveries=tuple(
        replace(r, from_fault_s=s) for r, s in zip(qos("x", 0).recoveries * 4, (9.0, 11.0, 12.0, 14.0), strict=True)))
    lines = verdict([qos("static-30", 100, 0.01), qos("chronos", 60, 0.02), settings], "busy")
    assert "chronos-settings 20 s" in lines[0]
    recovery = next(line for line in lines if "p90" in line)
    assert recovery.startswith("MET") and "mean 11.5 s" in recovery, recovery


def test_idle_asks_only_for_no_more_violations_than_the_best_static_interval() -> None:
    lines = verdict([qos("static-10", 12, 0.03), qos("static-60", 30, 0.005), qos("chronos", 12, 0.01)])
    assert lines[0].startswith("MET") and "static-10" in lines[0]
    assert verdict([qos("static-10", 12), qos("chronos", 13)])[0].startswith("NOT MET")


def test_a_lost_record_anywhere_fails_the_verdict() -> None:
    lines = verdict([qos("static-10", 100), qos("chronos", 10, lost=0), qos("khaos", 50, lost=3)])
    assert lines[-1].startswith("NOT MET") and "khaos 3/0" in lines[-1]


def test_records_still_arriving_when_the_check_ends_leave_the_line_undecided_not_met() -> None:
    late = replace(qos("khaos", 50, lost=22870), delivered_settled=False)
    lines = verdict([qos("static-10", 100), qos("chronos", 10), late])
    assert lines[-1].startswith("NOT DECIDED") and "still arriving" in lines[-1] and "khaos" in lines[-1]
    assert verdict([qos("static-10", 100, lost=1), qos("chronos", 10), late])[-1].startswith("NOT MET")
    assert table([late], "static-10")[0]["lost"] == "22870 not delivered yet"


def test_a_short_delivery_still_growing_is_said_to_be_undecided() -> None:
    late = DeliveryCheck.compare({"x-1": 5, "x-2": 7}, {"x-1": 3, "x-2": 7}, settled=False)
    assert "NOT DECIDED" in late.summary() and "2 of 12" in late.summary()
    assert "VIOLATED" in DeliveryCheck.compare({"x-1": 5}, {"x-1": 3}).summary()
    assert "VIOLATED" in DeliveryCheck.compare({"x-1": 5}, {"x-1": 6}, settled=False).summary(), "a duplicate is one"


def test_every_arm_sees_the_same_seeded_failures_inside_the_arm() -> None:
    assert scenario(False, 7) == scenario(False, 7) and scenario(False, 7) != scenario(False, 8)
    for quick in (True, False):
        sc = scenario(quick, 7)
        assert all(sc.step_at_s < at < sc.arm_s - sc.recovery_target_s - 15 for at in sc.failures_s)
        assert sc.rate(0) == sc.base_rate and sc.rate(sc.step_at_s) == sc.step_to


def test_the_busy_scenario_swings_between_40_and_85_percent_of_the_capacity_with_seeded_kills() -> None:
    for quick, kills, arm_s in ((True, 1, 900.0), (False, 4, 900.0), (False, 4, 600.0)):
        sc = busy_scenario(20_000, 7, quick, latency_target_s=20, recovery_target_s=30, arm_s=arm_s)
        assert sc.arm_s == (300 if quick else arm_s)
        rates = [sc.rate(t) for t in range(0, int(sc.arm_s))]
        assert sc.name == "busy" and len(sc.failures_s) == kills
        assert min(rates) >= 0.4 * 20_000 - 1 and max(rates) <= 0.85 * 20_000 + 1
        assert max(rates) > 0.84 * 20_000 and min(rates) < 0.41 * 20_000, "one whole compressed day per arm"
        assert all(sc.grace_s <= at <= sc.arm_s - sc.recovery_target_s - 15 for at in sc.failures_s)
        assert list(sc.failures_s) == sorted(sc.failures_s)
    assert busy_scenario(20_000, 7, False, 20, 30) == busy_scenario(20_000, 7, False, 20, 30)
    assert busy_scenario(20_000, 7, False, 20, 30).failures_s != busy_scenario(20_000, 8, False, 20, 30).failures_s


def saved(*arms: str, sc: Scenario = SC, targets: tuple[float, float] = (25.0, 45.0)) -> SavedRun:
    return SavedRun(sc, False, {a: {"arm": 600.0} for a in arms},
                    {"latency_target_s": targets[0], "recovery_target_s": targets[1], "best_static_s": 30.0},
                    tuple(arm(a, late_s=0, recovery_s=40.0) for a in arms))


def test_arms_of_several_invocations_of_one_scenario_are_one_table_in_their_order() -> None:
    merged = merge_runs([saved("static-60"), saved("chronos", "static-10")])
    assert [r.arm for r in merged.records] == ["static-60", "chronos", "static-10"]
    assert set(merged.laps) == {"static-60", "chronos", "static-10"}


def test_runs_that_did_not_see_the_same_trace_kills_or_targets_are_not_one_comparison() -> None:
    with pytest.raises(ValueError, match="another scenario"):
        merge_runs([saved("static-60"), saved("chronos", sc=replace(SC, failures_s=(100.0,)))])
    with pytest.raises(ValueError, match="latency_target_s"):
        merge_runs([saved("static-60"), saved("chronos", targets=(30.0, 45.0))])


def test_an_arm_measured_twice_is_refused_rather_than_one_of_them_picked() -> None:
    with pytest.raises(ValueError, match="more than one run: static-60"):
        merge_runs([saved("static-60"), saved("static-60", "chronos")])


def test_a_saved_run_reads_back_what_the_bench_wrote() -> None:
    run = saved("static-60", "chronos")
    written = json.loads(json.dumps({"scenario": asdict(run.scenario), "quick": run.quick, "laps": run.laps,
                                     "context": run.context, "records": [asdict(r) for r in run.records]}))
    assert SavedRun.parse(written) == run


def test_the_frontier_is_read_between_the_static_arms_on_either_side_of_the_contender_s_checkpoint_time() -> None:
    """A contender checkpointing a little less than static-10 is not judged against static-30 alone: any interval
    between the two was there to be set (a busy run measured: chronos 14.8 %, static-30 5.6 %, static-10 16.1 %)."""
    statics = [qos("static-30", 1604, 0.0564), qos("static-10", 974, 0.1612), qos("static-60", 1649, 0.0326)]
    value, said = frontier_at(statics, 0.1484)  # type: ignore[misc]
    assert said == "the line from static-30 to static-10" and value == pytest.approx(1051, abs=1)
    assert frontier_at(statics, 0.0564) == (1604, "static-30"), "on an arm: that arm"
    assert frontier_at(statics, 0.01) is None
    line = verdict([*statics, qos("chronos", 710, 0.1484)], "busy")[0]
    assert line.startswith("NOT MET") and "710 s vs 1051 s (32% fewer)" in line, line
