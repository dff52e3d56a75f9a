"""What a tuner writes or keeps for weeks stays bounded: helper logs roll over, old decisions become daily
summaries, Kafka's log rolls, Kubernetes and REST retries back off."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest

from chronos.cli.rotating_output import RotatingOutput
from chronos.errors import StackError
from chronos.flink.rest import FlinkRestClient
from chronos.k8s.kube_api import kube_call
from chronos.stack.kafka_broker import _LOG4J2
from chronos.tune.journal import DecisionRecord, TuneJournal

DAY_MS = 86_400_000
JOB = "0123456789abcdef0123456789abcdef"


def test_a_helper_log_rolls_over_and_keeps_a_few_old_ones(tmp_path: Path) -> None:
    log = tmp_path / "load.log"
    output = RotatingOutput(log, max_bytes=1000, backups=2)
    for n in range(200):
        output.write(f"{n:5d} s  sent {n * 1000:>10,}  achieved 1000/s\n")
    output.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["load.log", "load.log.1", "load.log.2"]
    assert all(p.stat().st_size <= 1000 for p in tmp_path.iterdir())
    assert log.read_text().splitlines()[-1].startswith("  199 s"), "the newest lines are in the live file"


def test_old_decisions_become_daily_summaries_and_recent_ones_stay(tmp_path: Path) -> None:
    journal = TuneJournal(tmp_path / "chronos.db")
    for n in range(48):  # two days of a decision an hour, one retune a day
        journal.record_decision(DecisionRecord(n * 3_600_000, "fleet", JOB, "retune" if n % 24 == 5 else "keep",
                                               10.0 + n % 3, None, True, "recovery", "r", "e"))
    assert journal.prune_decisions(DAY_MS) == 24
    assert journal.prune_decisions(DAY_MS) == 0, "idempotent"
    assert len(journal.decisions("fleet")) == 24
    assert journal.decision_days("fleet") == [("1970-01-01", 24, 1)]
    journal.prune_decisions(2 * DAY_MS)
    assert journal.decisions("fleet") == [] and journal.decision_days("fleet") == [("1970-01-01", 24, 1),
                                                                                 ("1970-01-02", 24, 1)]


def test_kafkas_log_is_a_rolling_file() -> None:
    props = dict(line.split("=", 1) for line in _LOG4J2.format(log="/s/server.log").splitlines())
    assert props["appender.file.type"] == "RollingFile"
    assert props["appender.file.policies.size.size"] == "10MB" and props["appender.file.strategy.max"] == "5"


class Unavailable(OSError):
    """What a socket raises when the API server is unreachable."""


def test_kubernetes_calls_back_off_on_transient_failures_then_say_it_in_one_line() -> None:
    slept: list[float] = []
    calls = [0]

    def unreachable() -> None:
        calls[0] += 1
        raise Unavailable("connection refused")

    with pytest.raises(StackError, match="cannot reach Kubernetes to get x: Unavailable"):
        kube_call("get x", unreachable, sleep=slept.append, rng=random.Random(0))
    assert calls[0] == 3 and len(slept) == 2 and slept[0] < slept[1] <= 8

    flaky = iter([Unavailable("reset"), "ok"])

    def once_then_ok() -> str:
        value = next(flaky)
        if isinstance(value, Exception):
            raise value
        return value

    assert kube_call("get y", once_then_ok, sleep=slept.append, rng=random.Random(0)) == "ok"


def test_waiting_for_a_job_waits_out_a_rest_blip_and_polls_less_and_less_often() -> None:
    answers = iter(["blip", "CREATED", "blip", "RUNNING"])
    slept: list[float] = []

    def flink(request: httpx.Request) -> httpx.Response:
        answer = next(answers)
        if answer == "blip":
            raise httpx.ConnectError("refused")
        vertices = [{"id": "v", "name": "Source: s", "parallelism": 1, "status": answer}]
        return httpx.Response(200, json={"jid": JOB, "name": "j", "state": answer, "start-time": 1, "now": 2,
                                         "vertices": vertices})

    client = FlinkRestClient("http://f", transport=httpx.MockTransport(flink), sleep=slept.append)
    assert client.wait_until_running(JOB, timeout_s=60).state == "RUNNING"
    assert slept == sorted(slept) and slept[0] == pytest.approx(0.1), "quick at first, then less often"
