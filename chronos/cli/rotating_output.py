"""A background helper's output, rolled over by size: a load generator that prints a line a second for
weeks would otherwise fill the disk (a line a second is ~8 MB a day).

The rollover itself is the standard library's (`RotatingFileHandler.doRollover`: name.log -> name.log.1
-> ... -> name.log.N); this is only the file-like face the consoles write to.
"""

from __future__ import annotations

import io
import os
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_FILE_ENV = "CHRONOS_LOG_FILE"  # set by `start_helper`: the helper writes its output there, rolled over
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3


class RotatingOutput(io.TextIOBase):
    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self._max = max_bytes
        self._handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")

    def _stream(self) -> io.TextIOWrapper:
        stream = self._handler.stream
        assert stream is not None, "opened at creation and at every rollover (delay=False)"
        return stream

    def write(self, text: str) -> int:
        if self._stream().tell() + len(text.encode()) > self._max:
            self._handler.doRollover()
        stream = self._stream()
        stream.write(text)
        stream.flush()
        return len(text)

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        self._handler.close()
        super().close()


def redirect_if_asked() -> RotatingOutput | None:
    """When started as a background helper, send stdout and stderr to the rolled-over log file."""
    import sys

    path = os.environ.get(LOG_FILE_ENV)
    if not path:
        return None
    output = RotatingOutput(Path(path))
    sys.stdout = sys.stderr = output
    return output
