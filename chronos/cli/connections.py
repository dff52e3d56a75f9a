"""The security of the clusters chronos is pointed at, from the options every command takes (`chronos --rest-ca-file
... tune`) or their environment variables.

Why the environment carries them once parsed: they are read where adapters are built (chronos.cli.wiring), on the
main thread and on a controller's worker threads alike, and by the helpers a command starts in the background (an
observer, a load); the environment is the one place all of them see, as `--debug` already is. It holds paths and
secrets' references only, never a secret, and the services chronos starts inherit none of it
(chronos.stack.service_account.INHERITED_ENV).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from chronos.connection_security import KafkaSecurity, RestSecurity, checked_file
from chronos.errors import InvalidInput, field_error
from chronos.input_files import read_mapping

REST_CA_ENV = "CHRONOS_REST_CA_FILE"
REST_CERT_ENV = "CHRONOS_REST_CERT_FILE"
REST_KEY_ENV = "CHRONOS_REST_KEY_FILE"
REST_AUTH_ENV = "CHRONOS_REST_AUTH"
KAFKA_SECURITY_ENV = "CHRONOS_KAFKA_SECURITY"


def rest_security(environ: Mapping[str, str]) -> RestSecurity | None:
    """What `--rest-ca-file`, `--rest-cert-file`, `--rest-key-file` and `--rest-auth` say; None if nothing."""
    ca, cert, key, auth = (environ.get(n) or None for n in (REST_CA_ENV, REST_CERT_ENV, REST_KEY_ENV, REST_AUTH_ENV))
    if not (ca or cert or key or auth):
        return None
    scheme, secret = None, None
    if auth:
        scheme, _, secret = auth.partition(":")
        if scheme not in ("bearer", "basic") or not secret:
            raise InvalidInput("--rest-auth: give bearer:REFERENCE (a token) or basic:REFERENCE (user:password), the "
                               "reference ${env:NAME} or ${file:/path}")
    for option, value in (("--rest-ca-file", ca), ("--rest-cert-file", cert), ("--rest-key-file", key)):
        if value is not None:  # the one reader: a FIFO or a device is refused before a library blocks on it
            try:
                checked_file(value, "the file")
            except InvalidInput as exc:
                raise InvalidInput(f"{option}: {exc}") from None
    try:
        return RestSecurity(ca_file=_absolute(ca), cert_file=_absolute(cert), key_file=_absolute(key),
                            auth_scheme=scheme, auth=secret)
    except ValidationError as exc:
        raise InvalidInput(f"--rest-auth: {field_error(exc.errors()).partition(': ')[2]}") from None


def kafka_security(environ: Mapping[str, str]) -> KafkaSecurity | None:
    """What `--kafka-security FILE` says (a YAML mapping with the fields of a job file's `io.kafka`); None if not
    given. Relative TLS files are the file's folder's."""
    given = environ.get(KAFKA_SECURITY_ENV)
    if not given:
        return None
    path = Path(given)
    raw = read_mapping(path, "Kafka security file", "security-protocol, sasl-mechanism, username, password, ca-file")
    for name in ("ca-file", "cert-file", "key-file"):
        if isinstance(raw.get(name), str):
            raw[name] = str((path.parent / raw[name]).resolve())
    try:
        return KafkaSecurity.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"invalid Kafka security file {path}: {field_error(exc.errors())}") from None


def check_kafka_files(security: KafkaSecurity | None) -> None:
    """The TLS files a Kafka security file names, through the one file reader (a FIFO given as a CA would block the
    Kafka client's open for ever): said at a command's start, not at its first client."""
    for name in ("ca_file", "cert_file", "key_file"):
        path = None if security is None else getattr(security, name)
        if path is not None:
            checked_file(path, f"the Kafka security file's {name.replace('_', '-')}")


def remember(values: Mapping[str, str | None]) -> None:
    """The options given on the command line, for every part of this command (and its helpers) to read."""
    for name, value in values.items():
        if value is not None:
            os.environ[name] = value


def _absolute(value: str | None) -> str | None:
    return None if value is None else str(Path(value).resolve())
