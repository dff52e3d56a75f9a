"""How chronos proves who it is to a secured Kafka and a secured Flink REST API, as values every adapter builds its
client from.

Why values and not client options scattered over the adapters: one description of a cluster's security (a job
file's `io.kafka`, a stack's, `--kafka-security FILE`, the `--rest-*` options) has to reach every client chronos makes
for it (offsets, observer, recorder, replay producer, topic admin, REST) and the job's own program in the profiling
copies, each of which spells the settings its own way (kafka-python, librdkafka, the Java client). Secrets are
`SecretRef`s, resolved only inside the `*_settings` methods called where a client is built; everything else here
(`describe`, the models' dumps) shows references only.
"""

from __future__ import annotations

import re
import ssl
from base64 import b64encode
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chronos.errors import IN_FORCE, InvalidInput
from chronos.input_files import read_bytes, read_text
from chronos.secret_refs import SecretRef, SecretReference

_HEADER_SAFE = re.compile(r"[\x20-\x7e]+")

KafkaProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaSecurity(BaseModel):
    """A Kafka client's security: a job file's `io.kafka`, a stack's, or `--kafka-security FILE` (same fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    protocol: KafkaProtocol = Field("PLAINTEXT", alias="security-protocol")
    sasl_mechanism: SaslMechanism | None = Field(None, alias="sasl-mechanism")
    username: str | None = Field(None, min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f\"\\]+$")
    password: SecretReference | None = None
    ca_file: str | None = Field(None, alias="ca-file")  # PEM; none: the system's trusted CAs
    cert_file: str | None = Field(None, alias="cert-file")  # PEM: mutual TLS
    key_file: str | None = Field(None, alias="key-file")
    key_password: SecretReference | None = Field(None, alias="key-password")

    @model_validator(mode="after")
    def _complete(self) -> KafkaSecurity:
        sasl = self.protocol.startswith("SASL_")
        if sasl and not (self.sasl_mechanism and self.username and self.password):
            raise ValueError(f"security-protocol {self.protocol} needs sasl-mechanism, username and password")
        if not sasl and (self.sasl_mechanism or self.username or self.password):
            raise ValueError(f"sasl-mechanism, username and password need a SASL security-protocol, not {self.protocol}")
        tls_fields = [n for n in ("ca_file", "cert_file", "key_file", "key_password") if getattr(self, n)]
        if tls_fields and not self.protocol.endswith("SSL"):
            raise ValueError(f"{tls_fields[0].replace('_', '-')} needs security-protocol SSL or SASL_SSL")
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("cert-file and key-file go together (mutual TLS)")
        for name in ("ca_file", "cert_file", "key_file"):
            value = getattr(self, name)
            if value is not None and not value.startswith("/"):
                raise ValueError(f"{name.replace('_', '-')}: give an absolute path (a job file's are taken relative "
                                 "to its folder)")
        return self

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def describe(self) -> str:
        """One line for a status or an error: what, as whom, trusting which CA; never a secret."""
        if not self.secured:
            return "PLAINTEXT"
        parts: list[str] = [self.protocol]
        if self.sasl_mechanism:
            parts.append(f"{self.sasl_mechanism} as {self.username}")
        if self.protocol.endswith("SSL"):
            parts.append(f"CA {self.ca_file}" if self.ca_file else "the system's CAs")
        if self.cert_file:
            parts.append(f"client certificate {self.cert_file}")
        return ", ".join(parts)

    def kafka_python_settings(self) -> dict[str, Any]:
        """kafka-python's keyword arguments (secrets resolved now)."""
        if not self.secured:
            return {}
        settings: dict[str, Any] = {"security_protocol": self.protocol}
        if self.sasl_mechanism:
            settings |= {"sasl_mechanism": self.sasl_mechanism, "sasl_plain_username": self.username,
                         "sasl_plain_password": _resolved(self.password)}
        if self.protocol.endswith("SSL"):
            settings |= {"ssl_check_hostname": True, "ssl_cafile": self._file("ca_file"),
                         "ssl_certfile": self._file("cert_file"), "ssl_keyfile": self._file("key_file"),
                         "ssl_password": _resolved(self.key_password)}
        return {k: v for k, v in settings.items() if v is not None}

    def librdkafka_settings(self) -> dict[str, str]:
        """librdkafka's (confluent-kafka's) configuration entries (secrets resolved now)."""
        if not self.secured:
            return {}
        settings = {"security.protocol": self.protocol.lower()}
        if self.sasl_mechanism:
            settings |= {"sasl.mechanisms": self.sasl_mechanism, "sasl.username": self.username or "",
                         "sasl.password": _resolved(self.password) or ""}
        if self.protocol.endswith("SSL"):
            optional = {"ssl.ca.location": self._file("ca_file"), "ssl.certificate.location": self._file("cert_file"),
                        "ssl.key.location": self._file("key_file"), "ssl.key.password": _resolved(self.key_password)}
            settings |= {k: v for k, v in optional.items() if v is not None}
        return settings

    def _file(self, field: str) -> str | None:
        path: str | None = getattr(self, field)
        return None if path is None else checked_file(path, f"Kafka {field.replace('_', '-')}")

    def program_args(self) -> tuple[str, ...]:
        """The shipped demo program's options for its own Kafka clients (the Java client inside Flink): secrets as
        references, which the program resolves where it runs (chronos writes none into a job's arguments). Mutual TLS
        is chronos's clients' only: the program takes no client certificate."""
        if not self.secured:
            return ()
        if self.cert_file:
            raise ValueError("the shipped demo program logs in to Kafka without a client certificate (mutual TLS is "
                             "for chronos's own clients); give it a SASL login instead")
        args: tuple[str, ...] = ("--kafka-security-protocol", self.protocol)
        if self.sasl_mechanism:
            args += ("--kafka-sasl-mechanism", self.sasl_mechanism, "--kafka-username", self.username or "",
                     "--kafka-password", str(self.password))
        if self.ca_file:
            args += ("--kafka-ca-file", self.ca_file)
        return args

    def secrets(self) -> tuple[str, ...]:
        """The resolved secrets, for scrubbing a library's message before it is said (chronos.errors.scrub)."""
        return tuple(s for s in (_resolved(self.password), _resolved(self.key_password)) if s)


PLAINTEXT = KafkaSecurity()


class RestSecurity(BaseModel):
    """How chronos reaches a Flink REST API over TLS (Flink's `security.ssl.rest.*`, with a client certificate when
    `security.ssl.rest.authentication-enabled`) or behind a proxy asking an Authorization header."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    ca_file: str | None = Field(None, alias="ca-file")  # PEM; none: the system's trusted CAs
    cert_file: str | None = Field(None, alias="cert-file")  # PEM: mutual TLS
    key_file: str | None = Field(None, alias="key-file")
    key_password: SecretReference | None = Field(None, alias="key-password")
    auth_scheme: Literal["bearer", "basic"] | None = Field(None, alias="auth-scheme")
    auth: SecretReference | None = None  # bearer: the token; basic: "user:password"

    @model_validator(mode="after")
    def _complete(self) -> RestSecurity:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("the client certificate and its key go together (mutual TLS)")
        if bool(self.auth_scheme) != bool(self.auth):
            raise ValueError("an Authorization header needs both its scheme (bearer or basic) and its secret")
        return self

    @property
    def empty(self) -> bool:
        return not (self.ca_file or self.cert_file or self.auth)

    def describe(self) -> str:
        parts = [f"CA {self.ca_file}" if self.ca_file else "the system's CAs"]
        if self.cert_file:
            parts.append(f"client certificate {self.cert_file}")
        if self.auth_scheme:
            parts.append(f"{self.auth_scheme} authorization from {self.auth}")
        return ", ".join(parts)

    def ssl_context(self) -> ssl.SSLContext:
        """A context trusting `ca_file` (else the system's CAs) and presenting the client certificate, if any.
        OSError / ssl.SSLError when a file cannot be used; the caller names the option."""
        context = ssl.create_default_context(cadata=None if self.ca_file is None else
                                             read_text(Path(self.ca_file), "the REST API's CA file"))
        if self.cert_file and self.key_file:
            context.load_cert_chain(checked_file(self.cert_file, "client certificate"),
                                    checked_file(self.key_file, "client key"), _resolved(self.key_password))
        return context

    def headers(self) -> dict[str, str]:
        """The Authorization header (secret resolved now), if any; one line naming the reference for a secret no
        header can carry (HTTP's header values are printable ASCII)."""
        secret = _resolved(self.auth)
        if secret is None:
            return {}
        if not _HEADER_SAFE.fullmatch(secret):
            raise InvalidInput(f"{self.auth}: the secret holds a character an Authorization header cannot carry (a "
                               "control character, a newline or non-ASCII text); only printable ASCII is sent")
        value = "Basic " + b64encode(secret.encode()).decode() if self.auth_scheme == "basic" else f"Bearer {secret}"
        IN_FORCE.remember(value, value.split(" ", 1)[1])
        return {"Authorization": value}

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (_resolved(self.auth), _resolved(self.key_password)) if s)


NO_REST_SECURITY = RestSecurity()


def checked_file(path: str, what: str) -> str:
    """`path` once the one file reader takes it (a regular file, small, readable), for a library that opens it itself:
    a FIFO given as a CA would block that library's open for ever."""
    read_bytes(Path(path), what)
    return path


def _resolved(ref: SecretRef | None) -> str | None:
    return None if ref is None else ref.resolve()
