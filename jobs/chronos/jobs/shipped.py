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


def own_copy(relative: str, directory: Path, tag: str, parallelism: int | None = None) -> Path:
    """A shipped SQL job's file with a name, topics, consumer group and transactional ids of its own (each suffixed
    `-tag`), its SQL by absolute path, written into `directory`: several instances of one shipped job on one broker
    and cluster, as a user runs them (and the many-job tests and bench do)."""
    import yaml

    source = shipped(relative)
    data = yaml.safe_load(source.read_text())
    data["name"] += f"-{tag}"
    if parallelism is not None:
        data["parallelism"] = parallelism
    data["program"]["sql"] = str(source.with_name(data["program"]["sql"]))
    data["program"]["vars"] = {k: f"{v}-{tag}" for k, v in data["program"]["vars"].items()}
    io = data["io"]
    io["input-topic"] = [f"{t}-{tag}" for t in io["input-topic"]] if isinstance(io["input-topic"], list) \
        else f"{io['input-topic']}-{tag}"
    io["output-topic"] += f"-{tag}"
    path = directory / f"{source.stem}-{tag}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
