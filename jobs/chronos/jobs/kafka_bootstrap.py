"""Failing fast when no Kafka bootstrap server answers: kafka-python's clients wait up to half a
minute before giving up, which is no way to tell a user they typed the wrong address."""

from __future__ import annotations

import socket

from chronos.errors import KafkaUnavailable
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
