"""Creating (idempotently) and deleting topics on the stack's broker: the demo's, a profiling copy's."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import require_reachable


def _admin(bootstrap: str) -> Any:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    require_reachable(bootstrap)
    try:
        return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    except (KafkaError, OSError, ValueError) as exc:
        raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({type(exc).__name__})") from exc


def ensure_topics(bootstrap: str, names: Sequence[str], partitions: int = 2) -> list[str]:
    """Create the topics that do not exist yet; return the ones created."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = _admin(bootstrap)
    try:
        existing = set(admin.list_topics())
        missing = [n for n in names if n not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(n, partitions, 1) for n in missing])
        return missing
    finally:
        admin.close()


def delete_topics(bootstrap: str, names: Sequence[str]) -> None:
    """Delete topics that exist (a profiling copy's, when its run ends); absent ones are fine."""
    admin = _admin(bootstrap)
    try:
        existing = [n for n in names if n in set(admin.list_topics())]
        if existing:
            admin.delete_topics(existing)
    finally:
        admin.close()


def broker_answers(bootstrap: str) -> str | None:
    """None if the broker answers a metadata request now, else why not (one short line). Now: within 3 s, retrying
    at most 0.5 s apart. With the client's defaults one call against a broker still starting took 30 s, retrying
    ever further apart (up to 30 s): in CI a broker restarted beside a profile was not seen ready within
    `wait_ready`'s 60 s, its last try waiting out a backoff of 29 s."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000, bootstrap_timeout_ms=3000,
                                 reconnect_backoff_max_ms=500)
        try:
            admin.list_topics()
            return None
        finally:
            admin.close()
    except (KafkaError, OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__
