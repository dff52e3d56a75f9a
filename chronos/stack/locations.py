"""Where a stack lives and where its downloads are cached, unless told otherwise (flags, CHRONOS_STACK_DIR,
CHRONOS_CACHE_DIR). Shared by the CLI, the tests and the benchmarks."""

from __future__ import annotations

import os
from pathlib import Path


def default_stack_dir() -> Path:
    return Path(os.environ.get("CHRONOS_STACK_DIR") or Path.home() / ".chronos" / "stack")


def default_cache_dir() -> Path:
    """The Maven artifact cache. As root, /var/cache/chronos: the stack's services then run as another
    user, who could not read root's home."""
    if os.environ.get("CHRONOS_CACHE_DIR"):
        return Path(os.environ["CHRONOS_CACHE_DIR"])
    return Path("/var/cache/chronos") if os.geteuid() == 0 else Path.home() / ".cache" / "chronos"
