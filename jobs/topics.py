"""Creating the demo's topics (idempotently) on the stack's broker."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from chronos.errors import KafkaUnavailable
from chronos.jobs.kafka_bootstrap import require_reachable


def ensure_topics(bootstrap: str, names: Sequence[str], partitions: int = 2) -> list[str]:
    """Create the topics that do not exist yet; return the ones created."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import KafkaError, TopicAlreadyExistsError

    require_reachable(bootstrap)
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    except (KafkaError, OSError, ValueError) as exc:
        raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({type(exc).__name__})") from exc
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
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    require_reachable(bootstrap)
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    except (KafkaError, OSError, ValueError) as exc:
        raise KafkaUnavailable(f"cannot reach Kafka at {bootstrap} ({type(exc).__name__})") from exc
    try:
        existing = [n for n in names if n in set(admin.list_topics())]
        if existing:
            admin.delete_topics(existing)
    finally:
        admin.close()
