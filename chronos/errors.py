"""Errors a user can act on.

Every failure that is the user's input or environment (bad interval, unreachable REST URL, stack not
running, Maven missing) is raised as a ChronosError whose message is one line; the CLI prints exactly
that line and exits non-zero, so no traceback ever reaches the user for a known condition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# scheme://, then everything up to the last @ of the run of non-space characters: a password may hold @, / or
# : (http://admin:SEK@RET/pw@host), and hiding a path that holds an @ too costs nothing.
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)\S*@")
_JOB_ID = re.compile(r"[0-9a-f]{32}")


class ChronosError(Exception):
    """A failure with a one-line message meant for the user."""


class InvalidInput(ChronosError):
    """A value given by the user is malformed or out of range."""


class FlinkUnreachable(ChronosError):
    """The Flink REST endpoint did not answer."""


class FlinkRequestFailed(ChronosError):
    """Flink answered, but refused or failed the request."""


class UnknownJob(ChronosError):
    """No job with that id exists on the cluster."""


class StackError(ChronosError):
    """The local stack cannot be started, found or stopped."""


class ToolMissing(StackError):
    """A program the stack needs (java, mvn) is not installed."""


class KafkaUnavailable(ChronosError):
    """The Kafka broker did not answer."""


def field_error(errors: Sequence[Mapping[str, Any]]) -> str:
    """The first of a pydantic ValidationError's `errors()` as one line: "field.path: message"."""
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "value"
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")  # pydantic's word for a validator's own
    return f"{where}: {message}"


def redact(text: str) -> str:
    """`text` with the user:password of every URL in it replaced by `***` (a `--rest-url` given as
    http://user:pass@host must not come back in an error line or a log)."""
    return _CREDENTIALS.sub(r"\1***@", text)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret in it replaced by `***`: a library's message about a secured client (a refused login,
    a bad key) is said to the user, and no library promises to leave its credentials out of one."""
    for secret in sorted((s for s in secrets if len(s) >= 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def is_job_id(text: str) -> bool:
    """A Flink job id (32 lower-case hex digits): only such ids become file names or URL paths."""
    return isinstance(text, str) and _JOB_ID.fullmatch(text) is not None  # fullmatch: `$` lets a trailing newline by
