"""Every file of chronos is one module: `chronos` is one namespace over the repository's five source roots, each
module found at the one file that bears its name (no symlinks, no second name), and the shipped job programs and job
files are data no import reaches, found in a checkout as in a wheel (docs/architecture.md, "One name per module")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from chronos.jobs.shipped import shipped

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = [ROOT, *(ROOT / part for part in ("optimizer", "profiler", "chaos", "jobs"))]


def modules() -> dict[str, Path]:
    found = {}
    for root in SOURCE_ROOTS:
        for file in (root / "chronos").rglob("*.py"):
            relative = file.relative_to(root).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found[".".join(parts)] = file
    return found


def test_no_symlink_anywhere_in_the_source_roots() -> None:
    assert not [p for root in SOURCE_ROOTS for p in (root / "chronos").rglob("*") if p.is_symlink()]


def test_each_module_is_found_at_the_one_file_that_bears_its_name() -> None:
    found = modules()
    assert {"chronos.optimizer.evaluate", "chronos.profiler.store", "chronos.chaos.recovery", "chronos.jobs.loadgen",
            "chronos.tune.loop"} <= set(found)
    for name, file in found.items():
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None and Path(spec.origin).resolve() == file.resolve(), name


def test_chronos_is_one_namespace_and_the_parts_folders_are_no_packages_of_their_own() -> None:
    assert not (ROOT / "chronos" / "__init__.py").exists()
    for part in ("optimizer", "profiler", "chaos", "jobs"):
        assert not (ROOT / part / "__init__.py").exists()
        assert not list((ROOT / part).glob("*.py")), f"{part}/: modules live in {part}/chronos/{part}/"


def test_the_job_programs_are_data_no_import_reaches() -> None:
    for program in ("vehicle_stats_job", "sql_runner"):
        assert importlib.util.find_spec(f"chronos.jobs.{program}") is None
        assert shipped(f"flink-programs/{program}.py").is_file()
    assert shipped("shop_payments.yaml").is_file() and shipped("jar-job/build.sh").is_file()
