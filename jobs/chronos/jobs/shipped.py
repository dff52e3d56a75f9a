"""Where the jobs chronos ships are: their job files (`*.yaml`, `*.sql`) and PyFlink programs are data, not modules
(Flink runs a program; chronos never imports one), so they sit outside the import path: in a checkout at the top of
`jobs/` (`jobs/flink-programs/` for the programs), in an installed wheel beside this package
(`chronos/jobs/...`, the same relative paths)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parents[1]  # jobs/chronos/jobs -> jobs


def shipped(relative: str) -> Path:
    """The shipped file at `relative` (e.g. "shop_payments.yaml", "flink-programs/sql_runner.py")."""
    installed = _PACKAGE / relative
    return installed if installed.exists() else _CHECKOUT / relative
