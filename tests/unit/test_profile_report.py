"""The profile report: rows from stored runs, and the two plots."""

from pathlib import Path

from chronos.model import FaultRecord, RecoveryMeasurement
from chronos.profiler.records import ProfileRun, RunConfig, SteadyState
from chronos.profiler.report import plot_profile, report_rows


def run(trial: int, interval_ms: int, scale: float, recoveries: list[float | None], p99: float) -> ProfileRun:
    fault = FaultRecord("kill-taskmanager", "pid 1", 0, 0.0)
    ms = tuple(RecoveryMeasurement(fault, interval_ms, "WorstCase", 1, 2, 3, r, None, 1000 * trial, 10, 1)
               for r in recoveries)
    steady = SteadyState(1000.0, p99 / 2, p99 * 0.9, p99, 80.0, 4096.0, 55.0)
    return ProfileRun(f"r{trial}", "p", trial, RunConfig(interval_ms, scale), 1000.0 * scale, "completed",
                      0, 90_000, steady, ms)


def test_a_row_per_run_with_its_worst_recovery_and_what_did_not_recover() -> None:
    failed = ProfileRun("r9", "p", 9, RunConfig(2000, 1.0), 1000.0, "failed", 0, 5000, error="no cluster")
    rows = report_rows([run(1, 5000, 1.0, [30.0, 41.5, None], 900.0), failed])
    first, second = rows
    assert (first.recovery_s, first.not_recovered, first.faults) == (41.5, 1, 3)
    assert (first.checkpoint_kib, first.duration_s, first.p99_ms) == (4.0, 90.0, 900.0)
    assert (second.status, second.recovery_s, second.p99_ms, second.error) == ("failed", None, None, "no cluster")


def test_plots_are_written_as_png(tmp_path: Path) -> None:
    rows = report_rows([run(1, 2000, 1.0, [30.0], 500.0), run(2, 10_000, 1.0, [35.0], 800.0),
                        run(3, 10_000, 2.0, [40.0], 1500.0)])
    written = plot_profile(rows, tmp_path / "plots")
    assert [p.name for p in written] == ["recovery_vs_interval.png", "p99_vs_interval.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def phased_run(trial: int, interval_ms: int, detect_ms: int, settings: tuple[tuple[str, str], ...]) -> ProfileRun:
    fault = FaultRecord("kill-taskmanager", "pid 1", 100_000, 0.0)
    m = RecoveryMeasurement(fault, interval_ms, "WorstCase", 100_000 + detect_ms, 106_000 + detect_ms,
                            111_000 + detect_ms, 11.0 + detect_ms / 1000, None, 1000, interval_ms - 500, 1,
                            capacity=6000.0, settings_in_force=settings)
    steady = SteadyState(2000.0, 100.0, 150.0, 200.0, 80.0, 4096.0, 55.0)
    return ProfileRun(f"r{trial}", "p", trial, RunConfig(interval_ms, 1.0), 2000.0, "completed", 0, 90_000, steady,
                      (m, m))


def test_every_runs_recoveries_by_phase_measured_and_predicted_from_the_other_runs() -> None:
    from chronos.profiler.report import phase_rows

    fast = (("heartbeat.interval", "1s"), ("heartbeat.timeout", "5s"))
    rows = phase_rows([phased_run(1, 2000, 3000, fast), phased_run(2, 5000, 3000, fast),
                       phased_run(3, 5000, 15000, ())])
    assert [(r.trial, r.recoveries, r.model) for r in rows] == [(1, 2, "held out"), (2, 2, "held out"),
                                                                (3, 2, "held out")]
    assert rows[0].measured.detect_s == 3.0 and rows[0].measured.reschedule_s == 6.0
    assert rows[0].predicted.detect_s == 3.0, "the fast heartbeats of run 2 put the floor at 3 s"
    assert rows[2].predicted.detect_s > 10, "Flink's default heartbeats predicted slow from the prior's slope"
    alone = phase_rows([phased_run(1, 2000, 3000, fast)])
    assert [r.model for r in alone] == ["prior"], "no other run: the prior, said"
    assert phase_rows([run(1, 5000, 1.0, [30.0], 900.0)]) == [], "no capacity measured: no phases to show"
