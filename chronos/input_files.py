"""The one way chronos reads a file: a user's (job file, tune policy, chaos experiment, rate trace) or its own
state read back (stack.json, job records, helper records), each bounded before it is parsed.

Why one reader: checks made at each call site were reached piecemeal (a hostile-input sweep found a FIFO that
hung a command, a `.json` experiment parsed whole at 60 MB, JSON and YAML nested 100,000 deep that ended in a
RecursionError or ran for minutes). Here every file is
- a regular file (a FIFO, a device or a directory is refused before anything blocks on it),
- at most `max_bytes` (read no further than that, whatever the file claims),
- UTF-8 text,
- nested at most `MAX_DEPTH` levels, and free of YAML aliases (nested anchors expand without bound in
  whatever walks the result: `b: &b [*a, *a, ...]` is a few hundred bytes),
- and, where it is chronos's own state, trusted only if chronos's user owns it and nobody else may write it
  (as ssh refuses a config another user can write): a state file names PIDs root signals and directories it
  deletes.
Every refusal is one line naming the file and, for a schema, the field.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from chronos.errors import InvalidInput, field_error

MAX_BYTES = 1 << 20  # a job file, a policy, an experiment or a state file is a few KB; a larger one is not one of those
MAX_DEPTH = 64  # the deepest file chronos writes or reads nests 6 levels

M = TypeVar("M", bound=BaseModel)


class UntrustedFile(InvalidInput):
    """A state file someone other than chronos's user could have written: nothing in it is acted on."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path, what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes, or one line: missing, unreadable, not a regular file, or over `max_bytes`.
    Opened without blocking (a FIFO with no writer would hang `open`) and read no further than the cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"{what} {path} is {_kind(info.st_mode)}, not a file chronos reads")
        if info.st_size > max_bytes:
            raise InvalidInput(f"{what} {path} is over {max_bytes // 1024} KiB; chronos reads small files only")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:  # it grew while read
            raise InvalidInput(f"{what} {path} is over {max_bytes // 1024} KiB; chronos reads small files only")
        return b"".join(chunks)
    except OSError as exc:
        raise InvalidInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                           f"{exc.start})") from None


def check_depth(value: Any, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """`value` if its lists and mappings nest at most `max_depth` deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        if depth > max_depth:
            raise InvalidInput(f"{where} nests deeper than {max_depth} levels; chronos refuses it")
        stack.extend((child, depth + 1) for child in children)
    return value


def _loader() -> type[yaml.SafeLoader]:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the same grammar, ~20x faster


# Quoted scalars and comments, whose brackets nest nothing.
_QUOTED_OR_COMMENT = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|(?:^|(?<=\s))#[^\n]*")
_BRACKETS = re.compile(r"[\[\]{}]")


def _flow_depth(text: str) -> int:
    """How deep `[...]` and `{...}` nest, counted before any YAML parser sees them: PyYAML's scanner reads a
    flow collection ahead whole (quadratic in its depth), libyaml's refuses past 1,000 in words of its own."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_QUOTED_OR_COMMENT.sub("", text)):
        depth = depth + 1 if bracket in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def load_yaml(text: str, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse `text` as YAML with no aliases and at most `max_depth` levels; `where` names it in the one-line
    error. Flow brackets are counted first; then the events are scanned, and the scan stops at the first alias
    or level too deep (block nesting), before the constructor, which recurses once per level."""
    if len(text.encode()) > MAX_BYTES:
        raise InvalidInput(f"{where} is over {MAX_BYTES // 1024} KiB; chronos reads small configuration files only")
    if _flow_depth(text) > max_depth:
        raise InvalidInput(f"{where} nests deeper than {max_depth} levels; chronos refuses it")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=_loader()):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                line = f" (line {mark.line + 1})" if mark is not None else ""
                raise InvalidInput(f"{where} uses a YAML alias *{event.anchor}{line}; chronos refuses aliases "
                                   "(they can expand without bound): write the value out")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    raise InvalidInput(f"{where} nests deeper than {max_depth} levels; chronos refuses it")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{where} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more digits than Python converts
        raise InvalidInput(f"{where} holds a value chronos cannot read"
                           f"{' (an integer of over 4300 digits)' if 'digits' in str(exc) else ''}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: JSON's grammar allows it, and Python reads it as an infinity
        raise ValueError(f"the number {text[:24]} is out of range")
    return value


def load_json(text: str | bytes, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse `text` as strict JSON (no NaN or Infinity, written or overflowed) nested at most `max_depth` deep."""
    try:
        return check_depth(json.loads(text, parse_constant=_no_constant, parse_float=_finite), where, max_depth)
    except RecursionError:
        raise InvalidInput(f"{where} nests deeper than {max_depth} levels; chronos refuses it") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{where} is not UTF-8 text") from None
    except ValueError as exc:  # JSONDecodeError, a constant, an integer of more digits than Python converts
        raise InvalidInput(f"{where} is not valid JSON: {str(exc).splitlines()[0][:120]}") from None


def read_mapping(path: Path, what: str, hint: str) -> dict[str, Any]:
    """The YAML (or JSON) file's top-level mapping; `what` names the file ("job file"), `hint` says what it
    must hold."""
    loaded = load_yaml(read_text(path, what), f"{what} {path}")
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{what} {path} must be a mapping ({hint})")
    return loaded


def read_structured(path: Path, what: str) -> Any:
    """A `.json` file as JSON, anything else as YAML, both bounded the same way."""
    text = read_text(path, what)
    return load_json(text, f"{what} {path}") if path.suffix == ".json" else load_yaml(text, f"{what} {path}")


def validate(model: type[M], data: Any, where: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{where}: {field_error(exc.errors())}") from None


def require_private(path: Path, what: str) -> None:
    """Refuse a state file chronos did not write for itself: not a plain file (a symlink could point anywhere),
    not owned by the user chronos runs as, or writable by anyone else; the same for its folder (whoever can
    write the folder can swap the file), which may also be root's. Group write counts as anyone else's unless
    the group is one chronos's user is in (a private user group; Kubernetes' fsGroup on a volume), and a sticky
    folder (as /tmp) lets nobody else swap the file."""
    me = os.geteuid()
    ours = {os.getegid(), *os.getgroups()}
    try:
        info = os.lstat(path)
        folder = os.stat(path.parent)
    except OSError as exc:
        raise InvalidInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise UntrustedFile(f"{what} {path} is {'a symlink' if stat.S_ISLNK(info.st_mode) else _kind(info.st_mode)}, "
                            "not a file chronos wrote; not trusted, nothing in it is acted on")
    for where, found, is_folder in ((path, info, False), (path.parent, folder, True)):
        if found.st_uid != me and not (is_folder and found.st_uid == 0):
            raise UntrustedFile(f"{what} {path} is not trusted: {where} belongs to uid {found.st_uid}, not to uid {me} "
                                "that chronos runs as; nothing in it is acted on")
        sticky = is_folder and bool(found.st_mode & stat.S_ISVTX)
        others = bool(found.st_mode & 0o002) or (bool(found.st_mode & 0o020) and found.st_gid not in ours)
        if others and not sticky:
            raise UntrustedFile(f"{what} {path} is not trusted: {where} is writable by other users "
                                f"(mode {stat.S_IMODE(found.st_mode):o}); nothing in it is acted on")


def read_own_json(path: Path, what: str, max_bytes: int = MAX_BYTES) -> Any:
    """A JSON state file chronos wrote for itself, refused (`UntrustedFile`) unless it is still only its own."""
    require_private(path, what)
    return load_json(read_bytes(path, what, max_bytes), f"{what} {path}")


def read_own_model(path: Path, model: type[M], what: str) -> M:
    return validate(model, read_own_json(path, what), f"{what} {path}")


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` private to chronos's user (0600), atomically (a crash leaves old or new)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)
