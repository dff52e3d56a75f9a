"""Creating (idempotently) and deleting topics on the stack's broker: the demo's, a profiling copy's."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import client_refused, require_accepted


def _admin(bootstrap: str, security: KafkaSecurity) -> Any:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    require_accepted(bootstrap, security)
    try:
        return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                **security.kafka_python_settings())
    except (KafkaError, OSError, ValueError) as exc:
        raise client_refused(exc, bootstrap, security) from None


def ensure_topics(bootstrap: str, names: Sequence[str], partitions: int = 2,
                  security: KafkaSecurity = PLAINTEXT) -> list[str]:
    """Create the topics that do not exist yet; return the ones created."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = _admin(bootstrap, security)
    try:
        existing = set(admin.list_topics())
        missing = [n for n in names if n not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(n, partitions, 1) for n in missing])
        return missing
    finally:
        admin.close()


def delete_topics(bootstrap: str, names: Sequence[str], security: KafkaSecurity = PLAINTEXT) -> None:
    """Delete topics that exist (a profiling copy's, when its run ends); absent ones are fine."""
    admin = _admin(bootstrap, security)
    try:
        existing = [n for n in names if n in set(admin.list_topics())]
        if existing:
            admin.delete_topics(existing)
    finally:
        admin.close()


def broker_answers(bootstrap: str, security: KafkaSecurity = PLAINTEXT) -> str | None:
    """None if the broker answers a metadata request now, else why not (one short line). Now: within 3 s, retrying
    at most 0.5 s apart. With the client's defaults one call against a broker still starting took 30 s, retrying
    ever further apart (up to 30 s): in CI a broker restarted beside a profile was not seen ready within
    `wait_ready`'s 60 s, its last try waiting out a backoff of 29 s."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        if security.secured:
            require_accepted(bootstrap, security)  # a refused login said as such, not as a broker that never answered
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000, bootstrap_timeout_ms=3000,
                                 reconnect_backoff_max_ms=500, **security.kafka_python_settings())
        try:
            admin.list_topics()
            return None
        finally:
            admin.close()
    except KafkaUnavailable as exc:
        return str(exc)
    except (KafkaError, OSError, ValueError) as exc:
        return str(client_refused(exc, bootstrap, security))
