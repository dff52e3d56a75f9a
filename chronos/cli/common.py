"""What every command module shares: the consoles and the common options."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from chronos.errors import said
from chronos.terminal_text import TerminalConsole, styled

# Paths and ids must never be wrapped mid-token; nothing printed is markup (chronos.terminal_text says why).
out = TerminalConsole(soft_wrap=True)
err = TerminalConsole(stderr=True, soft_wrap=True)

StackDir = Annotated[
    Path | None,
    typer.Option("--stack-dir", envvar="CHRONOS_STACK_DIR", help="Stack directory \\[default: ~/.chronos/stack]"),
]
RestUrl = Annotated[
    str | None, typer.Option("--rest-url", envvar="CHRONOS_REST_URL", help="Flink REST URL \\[default: the stack's]")
]
Bootstrap = Annotated[
    str | None, typer.Option("--bootstrap", envvar="CHRONOS_BOOTSTRAP", help="Kafka bootstrap \\[default: the stack's]")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def finite(text: str) -> float:
    """A number option: NaN, infinities and absurd magnitudes are refused at parse time, not found deep
    inside a rate calculation or a database write."""
    try:
        number = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text[:40]!r} is not a number") from None
    if not math.isfinite(number) or abs(number) > 1e12:
        raise typer.BadParameter(f"{text[:40]!r} is not a finite number of sensible size (at most 1e12)")
    return number


def output_directory(path: Path, flag: str) -> Path:
    """`path` as a directory to write into, made if it is not there; one line if it cannot be (a file of that name,
    no permission), before anything is read or drawn."""
    from chronos.errors import InvalidInput

    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInput(f"{flag} {path} is not a directory (a file of that name is in the way)") from None
    except OSError as exc:
        raise InvalidInput(f"{flag} {path}: cannot make it a directory ({exc.strerror or type(exc).__name__})") from None
    if not path.is_dir():
        raise InvalidInput(f"{flag} {path} is not a directory (a file of that name is in the way)")
    return path


def stack_dir_of(value: Path | None) -> Path:
    from chronos.stack.locations import default_stack_dir

    return (value or default_stack_dir()).expanduser()


def _strict(data: Any) -> Any:
    """`data` as JSON can hold it: a NaN or an infinity (a value no reading should carry past the edge, but JSON has
    none) becomes null, so that every `--json` output parses as strict JSON; every string as chronos may say it."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, str):
        return said(data)
    if isinstance(data, dict):
        return {key: _strict(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_strict(value) for value in data]
    return data


def json_text(data: Any, indent: int | None = None) -> str:
    """What chronos prints as JSON: strict (no NaN), and with no secret in force (chronos.errors.said)."""
    return said(json.dumps(_strict(data), indent=indent, default=str, allow_nan=False))


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data, indent=2) + "\n")


JSON_LINES = threading.Lock()  # the jobs of one controller write from several threads: whole lines only


def print_json_line(data: Any) -> None:
    """One JSON object on one line: for output that is a stream of them (`chronos tune --json`), which `jq -c`, log
    shippers and a reader parsing line by line take one line at a time, as it happens."""
    line = json_text(data) + "\n"
    with JSON_LINES:
        sys.stdout.write(line)
        sys.stdout.flush()


def say_stale(line: str) -> None:
    """A recorded process chronos will not touch: said on stderr, one line, never an error."""
    err.print(line, style="yellow", highlight=False, soft_wrap=True, markup=False)


def timed_say(start: float) -> Callable[[str], None]:
    """Progress lines on stderr, each with the seconds since `start` (time.monotonic)."""
    import time

    return lambda line: err.print(styled((f"{time.monotonic() - start:5.1f} s", "dim"), f" {line}"), highlight=False)
