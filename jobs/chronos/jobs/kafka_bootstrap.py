"""Failing fast when no Kafka bootstrap server answers: kafka-python's clients wait up to half a
minute before giving up, which is no way to tell a user they typed the wrong address. And one line for a secured
broker that refused chronos (a wrong password, a certificate not trusted), never the library's trace."""

from __future__ import annotations

import socket
import time

from chronos.connection_security import KafkaSecurity
from chronos.errors import KafkaUnavailable, scrub
from chronos.model import check_bootstrap


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    servers = []
    for item in check_bootstrap(bootstrap).split(","):
        host, _, port = item.strip().rpartition(":")
        servers.append((host.strip("[]"), int(port)))
    return servers


def require_reachable(bootstrap: str, timeout_s: float = 3.0) -> None:
    """Raise KafkaUnavailable unless at least one bootstrap server accepts a TCP connection."""
    for host, port in parse_bootstrap(bootstrap):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError:
            continue
    raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap}: no bootstrap server accepts connections")


PROBE_S = 5.0  # a secured broker refuses a login or a handshake within milliseconds; a slow one is the client's to wait on


def require_accepted(bootstrap: str, security: KafkaSecurity, timeout_s: float = PROBE_S) -> None:
    """`require_reachable`, and for a secured client one connection that logs in first: kafka-python retries a refused
    login or an untrusted certificate silently until its 30 s bootstrap timeout and then says "Unable to bootstrap";
    librdkafka says at once which it was (its error callback), so chronos can say it in one line. A broker slow or
    restarting is not refused: the client made next waits for it as it always did."""
    require_reachable(bootstrap)
    if not security.secured:
        return
    from confluent_kafka import KafkaException, Producer

    errors: list[object] = []
    try:
        probe = Producer({"bootstrap.servers": bootstrap, **security.librdkafka_settings(), "error_cb": errors.append,
                          "log_level": 0, "socket.timeout.ms": int(timeout_s * 1000)})
    except KafkaException as exc:
        raise client_refused(exc, bootstrap, security) from None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            probe.list_topics(timeout=0.5)
            return
        except KafkaException:
            probe.poll(0)
        refused = [e for e in errors if _code(e) in ("_AUTHENTICATION", "_SSL")]
        if refused:
            raise client_refused(Exception(f"{_code(refused[0])}: {refused[0]}"), bootstrap, security)
        if errors:  # the broker is down or restarting: not a refusal
            return


def _code(error: object) -> str:
    name = getattr(error, "name", None)
    return str(name()) if callable(name) else ""


def client_refused(exc: BaseException, bootstrap: str, security: KafkaSecurity) -> KafkaUnavailable:
    """What a Kafka client's failure means to the user, in one line with no secret in it: the broker refused the
    login, its certificate is not trusted, a file of the settings cannot be read, or it could not be reached."""
    text = scrub(str(exc), _secrets(security))
    kind = type(exc).__name__
    lowered = f"{kind} {text}".lower()
    if (text.startswith("_AUTHENTICATION:") or "authentication failed" in lowered) and security.sasl_mechanism:
        return KafkaUnavailable(f"Kafka at {bootstrap} refused chronos's {security.sasl_mechanism} login as "
                                f"{security.username!r}: wrong user name or password (from {security.password})")
    if "certificate_verify_failed" in lowered or "certificate verify failed" in lowered:
        trusted = security.ca_file or "the system's CAs"
        return KafkaUnavailable(f"Kafka at {bootstrap} presented a certificate not signed by a CA chronos trusts "
                                f"({trusted}); give the broker's CA as ca-file")
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError) and exc.filename:
        return KafkaUnavailable(f"cannot read {exc.filename} for the Kafka client's TLS ({exc.strerror})")
    detail = f": {text[:200]}" if text else ""
    hint = "" if security.secured else "; if the broker is secured, give the client's security settings (io.kafka)"
    return KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({kind}{detail}){hint}")


def _secrets(security: KafkaSecurity) -> tuple[str, ...]:
    try:
        return security.secrets()
    except Exception:  # noqa: BLE001 - a secret that cannot be read now cannot be in the message either
        return ()
