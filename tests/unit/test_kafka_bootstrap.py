import socket
import time

import pytest

from chronos.errors import InvalidInput, KafkaUnavailable
from chronos.jobs.kafka_bootstrap import parse_bootstrap, require_reachable
from chronos.jobs.topics import broker_answers
from chronos.stack.ports import free_ports


def test_parses_a_server_list() -> None:
    assert parse_bootstrap("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]


@pytest.mark.parametrize("text", ["localhost", "a:b", ":9092", ""])
def test_rejects_malformed_bootstraps(text: str) -> None:
    with pytest.raises(InvalidInput, match="invalid Kafka bootstrap"):
        parse_bootstrap(text)


def test_fails_fast_when_nothing_listens() -> None:
    with pytest.raises(KafkaUnavailable, match="cannot reach Kafka"):
        require_reachable(f"127.0.0.1:{free_ports(1)[0]}", timeout_s=1)


def test_one_listening_server_is_enough() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        require_reachable(f"127.0.0.1:{free_ports(1)[0]},127.0.0.1:{server.getsockname()[1]}")


def test_a_broker_not_up_yet_is_answered_for_within_seconds() -> None:
    """`wait_ready` polls `broker_answers` until a restarted broker answers: each call says why not within seconds
    (with the client's defaults one call took 30 s, trying ever further apart)."""
    started = time.monotonic()
    why = broker_answers(f"127.0.0.1:{free_ports(1)[0]}")
    assert why is not None and "bootstrap" in why.lower() and time.monotonic() - started < 6
