"""Errors a user can act on.

Every failure that is the user's input or environment (bad interval, unreachable REST URL, stack not
running, Maven missing) is raised as a ChronosError whose message is one line; the CLI prints exactly
that line and exits non-zero, so no traceback ever reaches the user for a known condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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
    return f"{where}: {first.get('msg', 'invalid')}"
