"""The shipped PyFlink programs, loaded from their files for tests of their pure parts (argument parsing, SQL
rendering): a program is data to chronos (Flink runs it; nothing imports it), outside the import path."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from chronos.jobs.shipped import shipped


def program(name: str) -> ModuleType:
    """`vehicle_stats_job` or `sql_runner`, from jobs/flink-programs/."""
    spec = importlib.util.spec_from_file_location(f"program_{name}", shipped(f"flink-programs/{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
