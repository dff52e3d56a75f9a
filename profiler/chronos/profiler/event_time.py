"""Moving a recorded record's event time to the replay's now, so a profiling copy's windows, watermarks and
latency behave as the live job's do rather than as a job reading minutes-old data.

A record is replayed at `now`; every time it carries moves by the same `now - its Kafka timestamp`: the Kafka
timestamp itself, and each field of its JSON value the job file names (`event-time-fields`, JSON paths). The
gaps within a record (a client's clock against the broker's) stay as recorded. A field keeps its format:
epoch seconds, milliseconds, micro- or nanoseconds (told apart by magnitude), as a number or a numeric string,
or an ISO-8601 string (separator, fraction digits and zone suffix as they were).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.ext.parser import parse as parse_path
from jsonpath_ng.jsonpath import JSONPath

from chronos.errors import InvalidInput

_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})([T ])(\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?$")
# epoch units by magnitude: a value of at least the bound is in that unit (per millisecond)
_UNITS = ((1e17, 1e6), (1e14, 1e3), (1e11, 1.0), (0.0, 1e-3))


def _shift_epoch(value: float, delta_ms: int) -> float:
    per_ms = next(per for bound, per in _UNITS if abs(value) >= bound)
    return value + delta_ms * per_ms


def _shift_iso(text: str, delta_ms: int) -> str | None:
    found = _ISO.match(text)
    if found is None:
        return None
    date, sep, clock, fraction, zone = found.groups()
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}{(fraction or '')[:7]}{'+00:00' if zone == 'Z' else zone or ''}")
    except ValueError:
        return None
    moved = moment + timedelta(milliseconds=delta_ms)
    digits = len(fraction) - 1 if fraction else 0
    out = moved.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    if digits:
        out += "." + f"{moved.microsecond:06d}{'0' * 3}"[:digits]
    if zone:
        out += zone  # the same offset: `moved` kept the zone it was parsed with
    return out


def shifted(value: Any, delta_ms: int) -> Any:
    """`value` moved by `delta_ms`, in its own format; None when it is no time chronos can read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return round(_shift_epoch(value, delta_ms))
    if isinstance(value, float):
        return _shift_epoch(value, delta_ms)
    if isinstance(value, str):
        if re.fullmatch(r"-?\d+", value):
            return str(round(_shift_epoch(int(value), delta_ms)))
        if re.fullmatch(r"-?\d+\.\d*", value):
            return repr(_shift_epoch(float(value), delta_ms))
        return _shift_iso(value, delta_ms)
    return None


@dataclass(frozen=True)
class EventTimeFields:
    """The JSON paths of a record value's event-time fields (may be empty: only the Kafka timestamp moves)."""

    paths: tuple[str, ...] = ()
    _parsed: tuple[JSONPath, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parsed = []
        for path in self.paths:
            try:
                parsed.append(parse_path(path))
            except (JsonPathParserError, Exception) as exc:  # noqa: BLE001 - the parser raises bare Exceptions too
                raise InvalidInput(f"event-time field {path!r} is not a JSON path ({exc})") from None
        object.__setattr__(self, "_parsed", tuple(parsed))

    def matches(self, value: bytes | None) -> list[int]:
        """Which paths find a readable time in this value (their indices)."""
        document = _document(value)
        if document is None:
            return []
        return [i for i, path in enumerate(self._parsed)
                if any(shifted(m.value, 0) is not None for m in path.find(document))]

    def shift(self, value: bytes | None, delta_ms: int) -> bytes | None:
        """The value with every named field moved by `delta_ms`; unchanged if none is found (or it is no JSON)."""
        if not self._parsed or value is None:
            return value
        document = _document(value)
        if document is None:
            return value
        changed = False
        for path in self._parsed:
            for match in path.find(document):
                moved = shifted(match.value, delta_ms)
                if moved is not None:
                    document = match.full_path.update(document, moved)
                    changed = True
        return json.dumps(document, separators=(",", ":")).encode() if changed else value


def _document(value: bytes | None) -> Any:
    if not value:
        return None
    try:
        document = json.loads(value)
    except (ValueError, RecursionError):  # anyone can write to a topic: a record nested past Python's stack is no event
        return None
    return document if isinstance(document, dict | list) else None
