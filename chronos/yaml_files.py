"""Reading a user's YAML file (tune policy, job file) into a mapping, or one line saying why not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from chronos.errors import InvalidInput


def read_mapping(path: Path, what: str, hint: str) -> dict[str, Any]:
    """The file's top-level mapping; `what` names the file ("job file"), `hint` says what it must hold."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"cannot read {what} {path}: {str(exc).splitlines()[0]}") from exc
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{what} {path} must be a mapping ({hint})")
    return loaded
