"""What a secured setup writes: the stack's generated credentials (private, a chain that verifies), a broker config and
job records that hold references to secrets, never a secret; a job file's `io.kafka` as the user wrote it."""

from __future__ import annotations

import base64
import hashlib
import stat
from pathlib import Path

import pytest

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import InvalidInput
from chronos.jobs.job_file import load_job_file
from chronos.model import CheckpointSettings, JobSpec
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.stack.kafka_broker import render_server_properties, scram_credential
from chronos.stack.service_account import service_account
from chronos.stack.stack_credentials import CHRONOS_ONLY, StackCredentials, flink_rest_settings, generate


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> StackCredentials:
    folder = tmp_path_factory.mktemp("services")
    return generate(folder, service_account())


def test_the_credentials_are_readable_by_the_stacks_user_alone(creds: StackCredentials) -> None:
    files = [p for p in creds.folder.iterdir() if p.is_file()]
    assert len(files) >= 10
    if not service_account().separate:  # chronos's user runs the services too: its own, private
        assert stat.S_IMODE(creds.folder.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files), files
        return
    # As root: root's (nothing the services' user could change is read back by root), readable by the services'
    # group, but the CA's key and chronos's own client key, which no service reads.
    account = service_account()
    assert (creds.folder.stat().st_uid, creds.folder.stat().st_gid) == (0, account.gid)
    assert stat.S_IMODE(creds.folder.stat().st_mode) == 0o750
    for path in files:
        mode = 0o600 if path.name in CHRONOS_ONLY else 0o640
        assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (0, mode), path


def test_every_certificate_is_the_stacks_cas_and_names_the_loopback_address(creds: StackCredentials) -> None:
    from cryptography import x509

    ca = x509.load_pem_x509_certificate(creds.ca.read_bytes())
    for name in ("broker.pem", "flink-rest.pem", "client.pem"):
        cert = x509.load_pem_x509_certificates(creds.path(name).read_bytes())[-1]
        cert.verify_directly_issued_by(ca)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "127.0.0.1" in [str(ip) for ip in names.get_values_for_type(x509.IPAddress)], name


def test_generating_again_keeps_what_a_running_broker_knows(creds: StackCredentials) -> None:
    password = creds.read("kafka-password")
    assert generate(creds.folder.parent, service_account()).read("kafka-password") == password


def test_the_broker_config_names_its_secrets_files_never_their_content(creds: StackCredentials) -> None:
    config = render_server_properties(9093, 9094, Path("/data"), 2, creds)
    assert "listeners=SASL_SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094" in config
    assert f"password=\"${{dir:{creds.folder}:broker-password}}\"" in config
    assert "listener.name.controller.ssl.client.auth=required" in config
    for secret in ("kafka-password", "broker-password", "flink-store-password"):
        assert creds.read(secret) not in config
    assert "SASL" not in render_server_properties(9093, 9094, Path("/data"), 2)  # the plaintext stack as before


def test_a_scram_user_is_added_salted_the_password_never_on_a_command_line() -> None:
    entry = scram_credential("chronos", "pw", iterations=4096, salt=b"salt")
    salted = base64.b64encode(hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 4096)).decode()
    assert entry == f'SCRAM-SHA-512=[name=chronos,iterations=4096,salt="c2FsdA==",saltedpassword="{salted}"]'


def test_flink_serves_its_rest_api_over_tls_and_asks_for_a_client_certificate(creds: StackCredentials) -> None:
    settings = dict(flink_rest_settings(creds))
    assert settings["security.ssl.rest.enabled"] == "true"
    assert settings["security.ssl.rest.authentication-enabled"] == "true"
    assert settings["security.ssl.rest.truststore"] == str(creds.flink_truststore)


def test_a_job_file_gives_its_brokers_login_with_files_beside_it(tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text("-- q\n")
    path = tmp_path / "job.yaml"
    path.write_text("""
name: clicks
program: {sql: q.sql}
io:
  bootstrap: broker:9093
  input-topic: in
  output-topic: out
  kafka: {security-protocol: SASL_SSL, sasl-mechanism: SCRAM-SHA-256, username: analytics,
          password: "${file:/run/secrets/kafka}", ca-file: certs/ca.pem}
""")
    _, io = load_job_file(path, {})
    assert io.kafka == KafkaSecurity(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", username="analytics",
                                     password="${file:/run/secrets/kafka}", ca_file=str(tmp_path / "certs/ca.pem"))
    plain = path.read_text().replace("  kafka:", "  kafka_:").split("  kafka_:")[0]
    path.write_text(plain)
    assert load_job_file(path, {})[1].kafka == PLAINTEXT
    stack_default = KafkaSecurity(protocol="SSL", ca_file="/ca.pem")
    assert load_job_file(path, {}, kafka=stack_default)[1].kafka == stack_default  # when the file says nothing


def test_a_password_written_into_a_job_file_is_refused_without_repeating_it(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("""
name: clicks
io: {bootstrap: "b:9093", input-topic: in, output-topic: out,
     kafka: {security-protocol: SASL_SSL, sasl-mechanism: PLAIN, username: u, password: hunter2}}
""")
    with pytest.raises(InvalidInput) as refused:
        load_job_file(path, {}, program_required=False)
    assert "io.kafka.password: a secret is given by reference only" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_a_job_record_keeps_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOS_TEST_SECRET", "s3cr3t")
    from chronos.model import JobIO

    kafka = KafkaSecurity(protocol="SASL_SSL", sasl_mechanism="PLAIN", username="u", password="${env:CHRONOS_TEST_SECRET}")
    record = JobRecord("a" * 32, JobSpec("job"), CheckpointSettings(10_000), io=JobIO("b:1", "in", "out", kafka=kafka))
    store = JobRecordStore(tmp_path)
    store.save(record)
    written = (tmp_path / f"{'a' * 32}.json").read_text()
    assert "s3cr3t" not in written and "${env:CHRONOS_TEST_SECRET}" in written
    assert store.get("a" * 32) == record
