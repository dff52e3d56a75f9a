"""What a newcomer types first: `chronos --help` lists the commands in the order of the workflow, and
`chronos --version` says which chronos this is."""

from __future__ import annotations

import re
from importlib.metadata import version

from tests.support.cli import chronos

WORKFLOW = ["stack", "job", "load", "observe", "status", "chaos", "profile", "tune", "recommend", "report", "dashboards",
            "prometheus"]


def test_help_lists_the_commands_in_workflow_order() -> None:
    shown = chronos("--help")
    assert shown.returncode == 0, shown.stderr
    commands = shown.stdout[shown.stdout.index("Commands"):]
    listed = [m.group(1) for m in re.finditer(r"^│ (\w+)\s", commands, re.MULTILINE)]
    assert listed == WORKFLOW


def test_version_is_printed_and_exits_zero() -> None:
    shown = chronos("--version")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == f"chronos {version('chronos-flink')}"
