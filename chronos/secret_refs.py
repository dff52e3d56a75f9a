"""Secrets by reference: `${env:NAME}` (an environment variable) or `${file:/path}` (a file's content, e.g. a
Kubernetes Secret mounted read-only), never the secret itself.

Why: a value chronos holds is written somewhere sooner or later (a job record, the journal, the profile store, a
`--json` line, a log, an error message). A reference is what every one of them keeps; the secret is read only where a
client is built (`SecretRef.resolve`), and nothing that formats a reference (`str`, `repr`, pydantic's dump) can
reach the value. The syntax is Kafka's own config-provider one (`${provider:key}`), which operators already know.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, PlainSerializer

from chronos.errors import IN_FORCE, InvalidInput
from chronos.input_files import read_bytes

_REFERENCE = re.compile(r"\$\{(env|file):([^{}\s]+)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SECRET_BYTES = 64 << 10  # a password, a token, a key's passphrase: never more


@dataclass(frozen=True)
class SecretRef:
    kind: Literal["env", "file"]
    name: str  # the variable's name, or the file's absolute path

    def __str__(self) -> str:
        return f"${{{self.kind}:{self.name}}}"

    def __repr__(self) -> str:
        return f"SecretRef({self})"

    def resolve(self) -> str:
        """The secret, read now (a rotated file or variable is read anew by the next client built); one line naming
        the reference, never the value, when it cannot be read."""
        if self.kind == "env":
            value = os.environ.get(self.name)
            if value is None:
                raise InvalidInput(f"{self}: the environment variable {self.name} is not set")
            IN_FORCE.remember(value)
            return value
        try:  # the one reader of files: a FIFO, a device or a huge file is refused before anything blocks on it
            raw = read_bytes(Path(self.name), "the secret's file", MAX_SECRET_BYTES)
        except InvalidInput as exc:
            raise InvalidInput(f"{self}: {exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{self}: the file is not UTF-8 text") from None
        secret = text.rstrip("\r\n")  # `echo secret > file` and a mounted Secret's trailing newline are not the secret
        IN_FORCE.remember(secret)
        return secret


def is_reference(text: str) -> bool:
    return _REFERENCE.fullmatch(text) is not None


def secret_ref(text: object, what: str = "a secret") -> SecretRef:
    """`text` as a reference, or one line saying a secret is given only by reference (never echoing `text`: it may
    be the secret itself)."""
    if isinstance(text, SecretRef):
        return text
    found = _REFERENCE.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{what} is given by reference only: ${{env:NAME}} or ${{file:/absolute/path}} "
                         "(the value given is not repeated here)")
    kind, name = found.group(1), found.group(2)
    if kind == "env" and not _ENV_NAME.fullmatch(name):
        raise ValueError(f"{what}: ${{env:{name[:60]}}} does not name an environment variable")
    if kind == "file" and not name.startswith("/"):
        raise ValueError(f"{what}: ${{file:{name[:200]}}} is not an absolute path")
    return SecretRef("env" if kind == "env" else "file", name)


# A reference as a pydantic field: parsed from its text, written back as its text (never resolved).
SecretReference = Annotated[SecretRef, BeforeValidator(secret_ref), PlainSerializer(str, return_type=str)]
