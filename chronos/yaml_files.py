"""Reading a user's YAML file (tune policy, job file, chaos experiment) into plain data, or one line
saying why not.

YAML aliases are refused before anything is built: nested anchors (`b: &b [*a, *a, ...]`) load in
microseconds with `safe_load` because they share one object, but anything that walks the result
(variable substitution, validation) expands every alias, and a 1 KB file can then take forever and all
memory. A configuration file never needs them: write the values out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from chronos.errors import InvalidInput

MAX_BYTES = 1 << 20  # a job file, a policy or an experiment is a few KB; a larger one is not one of those


def load_yaml(text: str, where: str) -> Any:
    """Parse `text` as YAML with no aliases; `where` names it in the one-line error."""
    if len(text.encode()) > MAX_BYTES:
        raise InvalidInput(f"{where} is over {MAX_BYTES // 1024} KiB; chronos reads small configuration files only")
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                line = f" (line {mark.line + 1})" if mark is not None else ""
                raise InvalidInput(f"{where} uses a YAML alias *{event.anchor}{line}; chronos refuses aliases "
                                   "(they can expand without bound): write the value out")
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{where} is not valid YAML: {str(exc).splitlines()[0]}") from exc


def read_mapping(path: Path, what: str, hint: str) -> dict[str, Any]:
    """The file's top-level mapping; `what` names the file ("job file"), `hint` says what it must hold."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {what} {path}: {str(exc).splitlines()[0]}") from exc
    loaded = load_yaml(text, f"{what} {path}")
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{what} {path} must be a mapping ({hint})")
    return loaded
