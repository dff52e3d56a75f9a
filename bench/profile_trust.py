"""Profiles a user can trust: each job profiled with chronos's defaults beside its live job, judged.

    .venv/bin/python bench/profile_trust.py [--jobs demo,zones,shop,trends] [--out bench/results/profile_trust]

Per job, on a fresh local stack (2 slots): the job submitted as a user would (`chronos job submit`), its load
started (`chronos load run|shop --background`), 45 s to settle, then `chronos profile run --job ID` with every
default (input recorded and replayed, `--parallel auto`, `--repeats 2`, the default budget) and
`chronos profile report --models`. Read: the profile's wall time, runs and copies at a time; the live job's p99 and
throughput while copies ran against before (the profile's own live watch); each model's held-out error against its
repeat-noise floor and its 80 % intervals' held-out coverage. Judged by chronos.benchmarks.profile_trust.

`--refit` fits the models of the profiles kept beside the results (`<job>.profile.db`) again, as the code fits them now.

`trends` is the held-out job (bench/jobs/vehicle_trends.yaml): written for this bench, unlike the shipped ones,
never used to develop chronos. Writes <out>/<job>.json per job and <out>/results.md over every job measured there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from tune_controller import RESULTS, bench_stack

from chronos.benchmarks.profile_trust import ModelTrust, ProfileTrust, judge, pooled_coverage, table
from chronos.optimizer.model_trust import at_noise_floor

console = Console(stderr=True)
ROOT = Path(__file__).parents[1]
# job -> (what `chronos job submit` is given, what `chronos load` is given): rates as earlier benches ran them.
JOBS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "demo": (("demo",), ("run", "--rate", "2000")),
    "zones": (("zones",), ("run", "--rate", "2000")),
    "shop": (("--file", str(ROOT / "jobs" / "shop_payments.yaml")), ("shop", "--rate", "1000")),
    "trends": (("--file", str(ROOT / "bench" / "jobs" / "vehicle_trends.yaml")), ("run", "--rate", "1000")),
}
SETTLE_S = 45.0


def chronos(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronos.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def checked(*args: str, timeout: float = 3600) -> str:
    done = chronos(*args, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"chronos {' '.join(args[:3])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    return done.stdout


def profile_job(job: str, out: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    submit, load = JOBS[job]
    with bench_stack(f"chronos-bench-trust-{job}-") as (_, stack_dir):
        sd = str(stack_dir)
        job_id = json.loads(checked("job", "submit", *submit, "--json", "--stack-dir", sd))["job_id"]
        checked("load", *load, "--background", "--stack-dir", sd)
        console.print(f"{job}: job {job_id} under load ({' '.join(load)}); settling {SETTLE_S:g} s")
        time.sleep(SETTLE_S)
        started = time.monotonic()
        done = chronos("profile", "run", "--job", job_id, "--json", "--stack-dir", sd, *extra)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"{job}: profile run failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
        outcome = json.loads(done.stdout)
        plots = out / f"{job}_plots"
        report = json.loads(checked("profile", "report", "--models", "--json", "--stack-dir", sd, "--plots", str(plots)))
        shutil.copy(stack_dir / "profiles.db", out / f"{job}.profile.db")  # kept: --refit reads it again
        checked("load", "stop", "--stack-dir", sd)
    return {"job": job, "submit": list(submit), "load": list(load), "profile_args": list(extra), "wall_s": round(wall, 1),
            "outcome": outcome,
            "said": [line for line in done.stderr.splitlines() if line.strip() and "━" not in line][-40:],
            "report": report, "plots": [p.name for p in sorted(plots.glob("*.png"))]}


def refit(out: Path, job: str) -> None:
    """The job's report read again from its kept profile (after a change to how models are fitted)."""
    path = out / f"{job}.json"
    measured = json.loads(path.read_text())
    measured["report"] = json.loads(checked("profile", "report", "--models", "--json", "--db",
                                            str(out / f"{job}.profile.db")))
    path.write_text(json.dumps(measured, indent=2, default=str))


def trust_of(measured: dict[str, Any]) -> ProfileTrust:
    outcome, report = measured["outcome"], measured["report"]
    live = outcome.get("live") or {}
    before, during = live.get("throughput_before"), live.get("throughput_during")
    models = tuple(ModelTrust(what, m["family"], m["held_out_mape"], m["observations"], m["noise_floor_mape"],
                              at_noise_floor(m["held_out_mape"], m["noise_floor_mape"]), m["coverage"],
                              m["held_out_coverage"]) for what, m in report["models"].items())
    return ProfileTrust(measured["job"], measured["wall_s"], outcome["completed"], outcome["failed"],
                        outcome.get("parallel"), live.get("p99_change"),
                        during / before - 1 if before and during is not None else None, outcome.get("paused_s", 0.0),
                        models, tuple(w for w in ("recovery", "p99") if w not in report["models"]))


def write_results(out: Path) -> None:
    order = list(JOBS)
    files = sorted(out.glob("*.json"), key=lambda p: order.index(p.stem) if p.stem in order else len(order))
    measured = [json.loads(p.read_text()) for p in files]
    trusts = [trust_of(m) for m in measured]
    lines = ["# Profiles a user can trust: each job profiled beside its live job",
             "", "Produced by `bench/profile_trust.py`; per-job figures in `<job>.json`.", "",
             "| job | load | profile run given | wall min | runs (failed) | copies at a time | live p99 | live throughput "
             "| held back s |", "|---|---|---|---|---|---|---|---|---|"]
    for m, t in zip(measured, trusts, strict=True):
        def pct(v: float | None) -> str:
            return "-" if v is None else f"{v:+.1%}"
        lines.append(f"| {t.job} | {' '.join(m['load'])} | {' '.join(m.get('profile_args', [])) or 'defaults'} | "
                     f"{t.wall_s / 60:.1f} | {t.runs} ({t.failed}) | "
                     f"{t.parallel} | {pct(t.p99_change)} | {pct(t.throughput_change)} | {t.paused_s:.0f} |")
    lines += ["", table([*(v for t in trusts for v in judge(t)), *pooled_coverage(trusts)]), ""]
    (out / "results.md").write_text("\n".join(lines))
    console.print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--out", type=Path, default=RESULTS / "profile_trust")
    parser.add_argument("--profile-arg", action="append", default=[], help="passed to chronos profile run (a trial)")
    parser.add_argument("--refit", action="store_true", help="only fit the kept profiles' models again")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for job in args.jobs.split(","):
        if job not in JOBS:
            raise SystemExit(f"unknown job {job!r}; known: {', '.join(JOBS)}")
        if args.refit:
            refit(args.out, job)
            continue
        measured = profile_job(job, args.out, tuple(args.profile_arg))
        (args.out / f"{job}.json").write_text(json.dumps(measured, indent=2, default=str))
        console.print({k: asdict(v) if hasattr(v, "__dataclass_fields__") else v
                       for k, v in asdict(trust_of(measured)).items()})
        write_results(args.out)
    if args.refit:
        write_results(args.out)


if __name__ == "__main__":
    main()
