"""Errors a user can act on.

Every failure that is the user's input or environment (bad interval, unreachable REST URL, stack not
running, Maven missing) is raised as a ChronosError whose message is one line; the CLI prints exactly
that line and exits non-zero, so no traceback ever reaches the user for a known condition.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

# scheme://, then everything up to the last @ of the run of non-space characters: a password may hold @, / or
# : (http://admin:SEK@RET/pw@host), and hiding a path that holds an @ too costs nothing.
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)\S*@")
_JOB_ID = re.compile(r"[0-9a-f]{32}")


class ChronosError(Exception):
    """A failure with a one-line message meant for the user. Its text is what chronos may say (`said`): a message
    that quotes a server or a library carries no secret in force, wherever it is printed or stored."""

    def __str__(self) -> str:
        return said(super().__str__())


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


class SecretsInForce:
    """The secrets this process has read (a token, a password, a key's passphrase, a URL's password) and the forms it
    sent them in (an Authorization header, its base64, a JSON string's escapes): no line chronos says or writes may
    carry one.

    Process-wide by design, the one exception to passing state in: a secret is read where a client is built, deep in
    an adapter, and can come back anywhere above (a server that echoes the header it got, a library's message), so
    every sink (the one-line error, the consoles, JSON output, a journal note made of an error) scrubs with all that
    was read, and no path between can forget it."""

    MIN_LENGTH = 3  # shorter is no secret: replacing every "a" would say nothing

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()

    def remember(self, *secrets: str) -> None:
        new = {form for secret in secrets if len(secret) >= self.MIN_LENGTH
               for form in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1])}
        with self._lock:  # read and replaced whole: scrub reads a tuple that is always one or the other
            if not new <= set(self._values):
                self._values = tuple(sorted({*self._values, *new}, key=len, reverse=True))  # a form inside another

    def remember_url(self, url: str) -> None:
        """A URL's password, as given and as sent (percent-decoded; HTTP's basic authorization of user:password)."""
        if "@" not in url:
            return
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        if parts.password:
            user, password = unquote(parts.username or ""), unquote(parts.password)
            self.remember(parts.password, password, base64.b64encode(f"{user}:{password}".encode()).decode())

    def scrub(self, text: str) -> str:
        return scrub(text, self._values)


IN_FORCE = SecretsInForce()


def said(text: str) -> str:
    """`text` as chronos may say or write it: the credentials of every URL in it hidden, every secret in force
    replaced by `***`."""
    return IN_FORCE.scrub(redact(text))


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret in it replaced by `***`: a library's message about a secured client (a refused login,
    a bad key) is said to the user, and no library promises to leave its credentials out of one."""
    for secret in sorted((s for s in secrets if len(s) >= 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def is_job_id(text: str) -> bool:
    """A Flink job id (32 lower-case hex digits): only such ids become file names or URL paths."""
    return isinstance(text, str) and _JOB_ID.fullmatch(text) is not None  # fullmatch: `$` lets a trailing newline by
