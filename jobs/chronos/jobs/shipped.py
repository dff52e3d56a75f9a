"""Where the jobs chronos ships are: their job files (`*.yaml`, `*.sql`) and PyFlink programs are data, not modules
(Flink runs a program; chronos never imports one), so they sit outside the import path: in a checkout at the top of
`jobs/` (`jobs/flink-programs/` for the programs), in an installed wheel beside this package
(`chronos/jobs/...`, the same relative paths)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parents[1]  # jobs/chronos/jobs -> jobs


def shipped(relative: str) -> Path:
    """The shipped file at `relative` (e.g. "shop_payments.yaml", "flink-programs/sql_runner.py")."""
    installed = _PACKAGE / relative
    return installed if installed.exists() else _CHECKOUT / relative


def program(name: str) -> ModuleType:
    """A shipped PyFlink program (`vehicle_stats_job`, `sql_runner`) loaded from its file, for what is pure in it (its
    argument parser, its SQL rendering): a program imports only the standard library until Flink runs it."""
    spec = importlib.util.spec_from_file_location(f"chronos_program_{name}", shipped(f"flink-programs/{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
