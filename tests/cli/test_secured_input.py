"""The options for a secured cluster on bad input: one line naming what is wrong, before any command starts, and never
the secret (a password typed where a reference belongs is not repeated)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tests.support.cli import assert_one_line_error, chronos


def test_rest_options_that_cannot_work_are_one_line(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path)]
    assert_one_line_error(chronos("--rest-ca-file", str(tmp_path / "none.pem"), "job", "list", *sd),
                          "--rest-ca-file: ")
    done = chronos("--rest-auth", "bearer:s3cr3tTOKEN", "job", "list", *sd)
    assert_one_line_error(done, "--rest-auth: ")
    assert "s3cr3tTOKEN" not in done.stderr
    assert_one_line_error(chronos("--rest-auth", "token:${env:X}", "job", "list", *sd),
                          "--rest-auth: give bearer:REFERENCE")
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate")
    assert_one_line_error(chronos("--rest-ca-file", str(garbage), "job", "list", "--rest-url", "https://127.0.0.1:9",
                                  *sd), "cannot use the REST API's TLS files")


def test_a_kafka_security_file_that_cannot_work_is_one_line(tmp_path: Path) -> None:
    sd = ["--stack-dir", str(tmp_path)]
    assert_one_line_error(chronos("--kafka-security", str(tmp_path / "none.yaml"), "job", "list", *sd), "none.yaml")
    bad = tmp_path / "kafka.yaml"
    bad.write_text("security-protocol: SASL_SSL\nsasl-mechanism: SCRAM-SHA-512\nusername: u\npassword: hunter2\n")
    done = chronos("--kafka-security", str(bad), "job", "list", *sd)
    assert_one_line_error(done, "password: a secret is given by reference only")
    assert "hunter2" not in done.stderr
    bad.write_text("security-protocol: SASL_SSL\nusername: u\n")
    assert_one_line_error(chronos("--kafka-security", str(bad), "job", "list", *sd),
                          "needs sasl-mechanism, username and password")


def test_an_unreadable_secret_is_named_by_its_reference(tmp_path: Path) -> None:
    kafka = tmp_path / "kafka.yaml"
    kafka.write_text("security-protocol: SASL_SSL\nsasl-mechanism: PLAIN\nusername: u\n"
                     "password: ${env:CHRONOS_TEST_UNSET_PASSWORD}\n")
    with socket.socket() as listening:  # a broker's port that accepts: the login is what fails
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        done = chronos("--kafka-security", str(kafka), "observe", "run", "--bootstrap",
                       f"127.0.0.1:{listening.getsockname()[1]}", "--topic", "t", "--duration", "1",
                       "--stack-dir", str(tmp_path), env={"PATH": os.environ["PATH"]})
    assert_one_line_error(done, "${env:CHRONOS_TEST_UNSET_PASSWORD}: the environment variable")
