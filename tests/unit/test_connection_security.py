"""One description of a secured cluster reaches every client chronos makes, each in its own spelling, and only a
client's own settings ever hold a secret."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
from pydantic import ValidationError

from chronos.bounded_http import TlsSettingsUnreadable, rest_tls
from chronos.connection_security import PLAINTEXT, KafkaSecurity, RestSecurity
from chronos.errors import InvalidInput, field_error
from chronos.flink.rest import tls_refusal
from chronos.flink.submit import CliSubmitter
from chronos.jobs.shipped import program
from chronos.model import RunAs

SCRAM = {"security-protocol": "SASL_SSL", "sasl-mechanism": "SCRAM-SHA-512", "username": "chronos",
         "password": "${env:CHRONOS_TEST_KAFKA_PASSWORD}", "ca-file": "/etc/chronos/ca.pem"}


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOS_TEST_KAFKA_PASSWORD", "s3cr3t")


def test_plaintext_adds_nothing_to_any_client() -> None:
    assert PLAINTEXT.kafka_python_settings() == {} and PLAINTEXT.librdkafka_settings() == {}
    assert PLAINTEXT.program_args() == () and not PLAINTEXT.secured


def test_a_scram_login_over_tls_in_each_clients_spelling(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    security = KafkaSecurity.model_validate({**SCRAM, "ca-file": str(ca)})
    assert security.kafka_python_settings() == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "chronos",
        "sasl_plain_password": "s3cr3t", "ssl_check_hostname": True, "ssl_cafile": str(ca)}
    assert security.librdkafka_settings() == {
        "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "chronos",
        "sasl.password": "s3cr3t", "ssl.ca.location": str(ca)}


def test_a_ca_file_a_client_library_would_block_on_is_refused_before_any_client_is_built(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "ca.pem")
    with pytest.raises(InvalidInput, match="is a FIFO"):
        KafkaSecurity.model_validate({**SCRAM, "ca-file": str(tmp_path / "ca.pem")}).kafka_python_settings()
    with pytest.raises(InvalidInput, match="is a FIFO"):
        RestSecurity(ca_file=str(tmp_path / "ca.pem")).ssl_context()


def test_a_header_secret_no_http_header_can_carry_is_one_line_naming_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("tök€n", "abc\r\nX-Injected: 1", "tab\there"):
        monkeypatch.setenv("CHRONOS_TEST_TOKEN", bad)
        with pytest.raises(InvalidInput, match=r"\$\{env:CHRONOS_TEST_TOKEN\}: the secret holds a character") as raised:
            RestSecurity(auth_scheme="bearer", auth="${env:CHRONOS_TEST_TOKEN}").headers()
        assert bad not in str(raised.value)


def test_the_demo_program_gets_the_reference_and_reads_the_secret_where_it_runs() -> None:
    args = KafkaSecurity.model_validate(SCRAM).program_args()
    assert "s3cr3t" not in " ".join(args) and "${env:CHRONOS_TEST_KAFKA_PASSWORD}" in args
    job = program("vehicle_stats_job")
    ddl, _ = job.statements(job.parse_args(["--bootstrap", "broker:9093", *args]))
    for table in ddl[:2]:  # the source and the sink
        assert "'properties.security.protocol' = 'SASL_SSL'" in table
        # flink-sql-connector-kafka shades the client: the login module under the shaded name
        assert ("org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="chronos" password="s3cr3t";') in table
        assert "'properties.ssl.truststore.location' = '/etc/chronos/ca.pem'" in table
    with pytest.raises(SystemExit):
        job.parse_args(["--bootstrap", "b:1", "--kafka-password", "s3cr3t"])  # a password itself: refused


def test_the_sql_runner_resolves_a_variable_that_is_a_reference(tmp_path: Path) -> None:
    runner = program("sql_runner")
    secret = tmp_path / "pw"
    secret.write_text("s3cr3t\n")
    sql = "CREATE TABLE t WITH ('properties.sasl.jaas.config' = 'M required password=\"${pw}\";');"
    assert 'password="s3cr3t"' in runner.render(sql, {"pw": f"${{file:{secret}}}"})[0]
    secret.write_text("it's")
    with pytest.raises(ValueError) as refused:
        runner.render(sql, {"pw": f"${{file:{secret}}}"})
    assert "it's" not in str(refused.value)


@pytest.mark.parametrize(("fields", "says"), [
    ({"security-protocol": "SASL_SSL", "username": "u"}, "needs sasl-mechanism, username and password"),
    ({"security-protocol": "PLAINTEXT", "username": "u"}, "need a SASL security-protocol"),
    ({"security-protocol": "SASL_PLAINTEXT", "sasl-mechanism": "PLAIN", "username": "u", "password": "${env:X}",
      "ca-file": "/ca.pem"}, "needs security-protocol SSL or SASL_SSL"),
    ({"security-protocol": "SSL", "cert-file": "/c.pem"}, "go together"),
    ({"security-protocol": "SSL", "ca-file": "ca.pem"}, "absolute path"),
    ({"security-protocol": "SASL_SSL", "sasl-mechanism": "SCRAM-SHA-512", "username": "u", "password": "s3cr3t"},
     "by reference only"),
    ({"security-protocol": "SASL_SSL", "sasl-mechanism": "GSSAPI", "username": "u", "password": "${env:X}"},
     "sasl-mechanism: Input should be"),
])
def test_an_incomplete_or_contradictory_setting_is_refused_in_one_line(fields: dict[str, str], says: str) -> None:
    with pytest.raises(ValidationError) as refused:
        KafkaSecurity.model_validate(fields)
    line = field_error(refused.value.errors())  # what the user reads (pydantic's own str repeats the input)
    assert says in line and "s3cr3t" not in line


def test_describe_names_what_and_whom_never_the_secret() -> None:
    line = KafkaSecurity.model_validate(SCRAM).describe()
    assert line == "SASL_SSL, SCRAM-SHA-512 as chronos, CA /etc/chronos/ca.pem"
    rest = RestSecurity(ca_file="/ca.pem", auth_scheme="bearer", auth="${env:CHRONOS_TEST_KAFKA_PASSWORD}")
    assert "s3cr3t" not in rest.describe() and "${env:CHRONOS_TEST_KAFKA_PASSWORD}" in rest.describe()


def test_an_authorization_header_is_made_at_use() -> None:
    bearer = RestSecurity(auth_scheme="bearer", auth="${env:CHRONOS_TEST_KAFKA_PASSWORD}")
    assert bearer.headers() == {"Authorization": "Bearer s3cr3t"}
    os.environ["CHRONOS_TEST_KAFKA_PASSWORD"] = "admin:pw"
    basic = RestSecurity(auth_scheme="basic", auth="${env:CHRONOS_TEST_KAFKA_PASSWORD}")
    assert basic.headers() == {"Authorization": "Basic YWRtaW46cHc="}
    with pytest.raises(ValidationError, match="both its scheme"):
        RestSecurity(auth="${env:X}")


def test_rest_tls_files_that_cannot_be_used_are_one_line(tmp_path: Path) -> None:
    assert rest_tls(None) == (True, {})
    with pytest.raises(TlsSettingsUnreadable, match=r"cannot use the REST API's TLS files \(/nowhere/ca.pem\)"):
        rest_tls(RestSecurity(ca_file="/nowhere/ca.pem"))
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(TlsSettingsUnreadable):
        rest_tls(RestSecurity(ca_file=str(bad)))


def test_a_failed_handshake_says_which_side_refused_what() -> None:
    untrusted = ssl.SSLCertVerificationError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    said = tls_refusal("https://jm:8081", RestSecurity(), untrusted)
    assert said is not None and "not signed by a CA chronos trusts (the system's CAs)" in said
    no_client_cert = ssl.SSLError("[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    said = tls_refusal("https://jm:8081", RestSecurity(ca_file="/ca.pem"), no_client_cert)
    assert said is not None and "refused chronos's TLS client (no client certificate)" in said
    assert tls_refusal("https://jm:8081", RestSecurity(), ConnectionRefusedError("refused")) is None


def test_flinks_own_client_is_pointed_at_an_https_address_whole(tmp_path: Path) -> None:
    """`flink run -m host:port` speaks plain HTTP to a REST API over TLS (measured: "Channel became inactive")."""
    from chronos.flink.distribution import find_distribution

    dist = find_distribution()
    secured = CliSubmitter(dist, "https://127.0.0.1:8081", tmp_path, tmp_path, None, RunAs(None, None, ()))
    plain = CliSubmitter(dist, "http://127.0.0.1:8081", tmp_path, tmp_path, None, RunAs(None, None, ()))
    assert secured._address == "https://127.0.0.1:8081" and plain._address == "127.0.0.1:8081"
