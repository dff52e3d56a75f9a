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


def stack_dir_of(value: Path | None) -> Path:
    from chronos.stack.locations import default_stack_dir

    return (value or default_stack_dir()).expanduser()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


JSON_LINES = threading.Lock()  # the jobs of one controller write from several threads: whole lines only


def print_json_line(data: Any) -> None:
    """One JSON object on one line: for output that is a stream of them (`chronos tune --json`), which `jq -c`, log
    shippers and a reader parsing line by line take one line at a time, as it happens."""
    line = json.dumps(data, default=str) + "\n"
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
