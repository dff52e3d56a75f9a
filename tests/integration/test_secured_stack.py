"""A secured stack (`chronos stack up --secure`: Kafka over TLS with SCRAM logins, Flink's REST over mutual TLS) is
watched, broken, profiled and tuned as a plaintext one is, through the CLI as a user runs it; a wrong password or an
untrusted CA is one line naming what was refused; and no file chronos wrote holds a secret.

Its own stack (the suite's shared one is plaintext): started once for the module, stopped at its end.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronos.flink.rest import FlinkRestClient
from chronos.stack.local_stack import StackOptions, down, up
from chronos.stack.stack_credentials import StackCredentials, credentials_of, generate
from chronos.stack.state import StackState
from tests.conftest import SUITE_RECOVERY_SETTINGS, cache_dir, wait_until
from tests.support.cli import assert_one_line_error, chronos
from tests.support.processes import leftovers
from tests.support.profile_copies import profile_topics

pytestmark = [pytest.mark.long(5), pytest.mark.copies]  # it profiles: one profile at a time (profiling_turn)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackState]:
    stack_dir = tmp_path_factory.mktemp("secured")
    state, started = up(StackOptions(stack_dir, cache_dir(), slots=4, jvm_opts=os.environ.get("CHRONOS_JVM_OPTS", ""),
                                     flink_settings=SUITE_RECOVERY_SETTINGS, secure=True))
    assert started and state.kafka_security is not None and state.rest_url.startswith("https://")
    try:
        yield state
    finally:
        down(stack_dir, purge=True)
        survivors = leftovers(stack_dir)
        assert not survivors, f"processes survived `stack down`: {survivors}"


@pytest.fixture(scope="module")
def creds(secured: StackState) -> StackCredentials:
    return credentials_of(Path(secured.services_dir))


@pytest.fixture(scope="module")
def demo(secured: StackState) -> Iterator[str]:
    """The demo job on the secured broker (its program logs in with the stack's SCRAM user)."""
    sd = ["--stack-dir", secured.stack_dir]
    done = chronos("job", "submit", "demo", "--interval", "5s", "--parallelism", "1", "--json", *sd, timeout=240)
    assert done.returncode == 0, done.stderr
    job_id = json.loads(done.stdout)["job_id"]
    try:
        yield job_id
    finally:
        with FlinkRestClient(secured.rest_url, security=secured.rest_client) as flink:
            for job in flink.jobs():
                if job.state == "RUNNING":
                    flink.cancel(job.jid)


def current_job(secured: StackState) -> str:
    with FlinkRestClient(secured.rest_url, security=secured.rest_client) as flink:
        running = [j.jid for j in flink.jobs() if j.state == "RUNNING"]
    assert len(running) == 1, running
    return running[0]


def test_status_and_the_observer_read_the_job_over_tls_and_scram(secured: StackState, demo: str) -> None:
    sd = ["--stack-dir", secured.stack_dir]
    stack = chronos("stack", "status", "--json", *sd)
    assert stack.returncode == 0, stack.stderr
    assert json.loads(stack.stdout)["health"] == "healthy"
    load = chronos("load", "run", "--rate", "200", "--background", *sd)  # librdkafka over SASL_SSL
    assert load.returncode == 0, load.stderr
    try:
        wait_until(lambda: _input_rate(secured, demo) > 0, 60, 2, what="the input rate read off the secured broker")
        observed = chronos("observe", "run", "--job", demo, "--duration", "10", "--window", "10", *sd, timeout=60)
    finally:
        chronos("load", "stop", *sd)
    assert observed.returncode == 0, observed.stderr
    last = [line for line in observed.stderr.splitlines() if line.startswith("records")][-1]
    assert int(last.split()[1]) > 0, observed.stderr  # committed output read over SASL_SSL


def _input_rate(secured: StackState, job_id: str) -> float:
    done = chronos("status", "--job", job_id, "--json", "--stack-dir", secured.stack_dir)
    assert done.returncode == 0, done.stderr
    return float(json.loads(done.stdout)[0].get("input_events_per_s") or 0)


def test_a_refused_login_or_an_untrusted_ca_is_one_line(secured: StackState, creds: StackCredentials,
                                                        tmp_path: Path) -> None:
    kafka = ["observe", "run", "--bootstrap", secured.bootstrap, "--topic", "vehicle-stats", "--duration", "5",
             "--stack-dir", secured.stack_dir]
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(f"security-protocol: SASL_SSL\nsasl-mechanism: SCRAM-SHA-512\nusername: chronos\n"
                     f"password: ${{env:CHRONOS_TEST_WRONG}}\nca-file: {creds.ca}\n")
    began = time.monotonic()
    done = chronos("--kafka-security", str(wrong), *kafka, env={**os.environ, "CHRONOS_TEST_WRONG": "wr0ng-pw"})
    assert_one_line_error(done, "refused chronos's SCRAM-SHA-512 login as 'chronos': wrong user name or password",
                          "${env:CHRONOS_TEST_WRONG}")
    assert "wr0ng-pw" not in done.stderr and time.monotonic() - began < 15
    stranger = generate(tmp_path / "another-stack", _me())  # a CA the broker's certificate is not signed by
    untrusted = tmp_path / "untrusted.yaml"
    untrusted.write_text(wrong.read_text().replace(str(creds.ca), str(stranger.ca))
                         .replace("${env:CHRONOS_TEST_WRONG}", str(creds.secret("kafka-password"))))
    assert_one_line_error(chronos("--kafka-security", str(untrusted), *kafka),
                          "presented a certificate not signed by a CA chronos trusts", str(stranger.ca))
    rest = ["job", "list", "--json", "--rest-url", secured.rest_url, "--stack-dir", secured.stack_dir]
    assert_one_line_error(chronos(*rest), "not signed by a CA chronos trusts (the system's CAs)")
    assert_one_line_error(chronos("--rest-ca-file", str(creds.ca), *rest),
                          "refused chronos's TLS client (no client certificate)")
    allowed = chronos("--rest-ca-file", str(creds.ca), "--rest-cert-file", str(creds.path("client.pem")),
                      "--rest-key-file", str(creds.path("client-key.pem")), *rest)
    assert allowed.returncode == 0 and "chronos-vehicle-stats" in allowed.stdout, allowed.stderr


def _me():  # type: ignore[no-untyped-def]
    from chronos.stack.service_account import service_account

    return service_account()


OWN_LOAD = """
title: TaskManager loss on the secured stack, with the experiment's own bounded load
load: {rate: 300, vehicles: 50, verify-timeout-s: 120}
steady-state-hypothesis:
  title: the load gets through
  window-s: 8
  probes:
    - {name: throughput near the load, signal: throughput, around: 300, tolerance-pct: 50}
method:
  - fault: kill-taskmanager
    when: {strategy: worst-case, before-s: 1}
rollbacks: [resume-taskmanagers, restart-taskmanagers]
"""


def test_chaos_breaks_the_job_and_proves_it_exactly_once(secured: StackState, demo: str, tmp_path: Path) -> None:
    """The experiment's load (librdkafka), its input count and output check (kafka-python) all log in over TLS."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(OWN_LOAD)
    done = chronos("chaos", "run", str(experiment), "--job", current_job(secured), "--hold", "5", "--timeout", "150",
                   "--json", "--stack-dir", secured.stack_dir, timeout=420)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["exactly_once"] is True, result.get("delivery")
    delivery = result["delivery"]
    assert delivery["input_events"] > 3_000 and delivery["lost"] == 0 and delivery["duplicated"] == 0
    assert delivery["input_events"] == delivery["output_events"] and delivery["keys"] == 50
    (m,) = result["measurements"]
    assert m["fault"]["kind"] == "kill-taskmanager"
    assert m["fault"]["injected_wall_ms"] < m["detected_ms"] < m["running_ms"] <= m["recovered_ms"]
    assert m["recovery_s"] > 0 and m["records_reprocessed"] > 0
    kinds = [e["kind"] for e in result["journal"]]
    assert kinds.index("load") < kinds.index("inject") < kinds.index("verify") < kinds.index("exactly-once")


def test_a_tuner_retunes_the_job_through_the_secured_rest_api(secured: StackState, demo: str, tmp_path: Path) -> None:
    job_id = current_job(secured)
    done = chronos("tune", "--job", job_id, "--strategy", "static", "--static-interval", "3s", "--realize", "restart",
                   "--latency-p99", "600s", "--recovery", "60s", "--startup-grace", "1ms", "--decide-every", "3s",
                   "--collect-every", "1s", "--duration", "25s", "--json", "--metrics-port", "-1",
                   "--db", str(tmp_path / "tune.db"), "--stack-dir", secured.stack_dir, timeout=240)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    retunes = [e for e in events if e.get("event") == "retune"]
    assert retunes and retunes[0]["outcome"] == "verified", events[-5:]
    replaced = current_job(secured)
    assert replaced == retunes[0]["new_job_id"] != job_id
    with FlinkRestClient(secured.rest_url, security=secured.rest_client) as flink:
        assert flink.checkpoint_config(replaced).interval == 3000
        assert flink.checkpoints(replaced).latest.restored is not None  # from the retune's savepoint


def test_a_short_profile_runs_its_copy_on_the_secured_broker(secured: StackState, demo: str, tmp_path: Path,
                                                              profiling_turn: None) -> None:
    db = tmp_path / "profile.db"
    done = chronos("profile", "run", "--job", current_job(secured), "--rate", "200", "--runs", "1", "--parallel", "1",
                   "--intervals", "2s..6s", "--faults", "0", "--repeats", "1", "--steady", "10s", "--warmup", "0s",
                   "--hold", "5s", "--timeout", "120s", "--budget", "30m", "--json", "--db", str(db),
                   "--stack-dir", secured.stack_dir, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert (outcome["completed"], outcome["failed"]) == (1, 0), outcome
    assert not list((Path(secured.stack_dir) / "profiling").glob("*/*/stack.json")), "its cluster is gone"
    assert profile_topics(secured.bootstrap, secured.kafka_client) == [], "its topics are deleted from the broker"


def test_no_file_chronos_wrote_holds_a_secret(secured: StackState, creds: StackCredentials, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    """Last in the module: every file under the stack directory (state, job records, journals, helpers' logs) and
    under the tests' own folders (profile store, journal) read for the client's password, the broker's, Flink's key
    stores' and the client key. The credentials' own folder (and Flink's config, which takes its key stores' password
    only as a value) are in the services' folder, not among chronos's files."""
    secrets = [creds.read(name) for name in ("kafka-password", "broker-password", "flink-store-password")]
    key = creds.path("client-key.pem").read_text().splitlines()[1]
    ours = tuple(name[:30] for name in dir(request.module) if name.startswith("test_"))  # pytest cuts tmp names at 30
    places = [Path(secured.stack_dir), *(d for d in tmp_path.parent.iterdir() if d.name.startswith(ours))]
    files = [p for place in places for p in place.rglob("*") if p.is_file() and creds.folder not in p.parents]
    assert len(files) > 5, files
    for path in files:
        data = path.read_bytes()
        for secret in (*secrets, key):
            assert secret.encode() not in data, f"{path} holds a secret"
