"""Secrets are given by reference, read only where a client is built, and never shown by anything that formats one."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from chronos.errors import InvalidInput, scrub
from chronos.secret_refs import SecretRef, SecretReference, secret_ref


def test_a_reference_names_an_environment_variable_or_an_absolute_file() -> None:
    assert secret_ref("${env:KAFKA_PASSWORD}") == SecretRef("env", "KAFKA_PASSWORD")
    assert secret_ref("${file:/run/secrets/kafka}") == SecretRef("file", "/run/secrets/kafka")


@pytest.mark.parametrize("given", ["hunter2", "${env:NOT A NAME}", "${file:relative/path}", "${vault:x}", "", 42])
def test_anything_else_is_refused_without_repeating_it(given: object) -> None:
    with pytest.raises(ValueError) as refused:
        secret_ref(given, "io.kafka.password")
    assert "hunter2" not in str(refused.value)


def test_a_reference_resolves_where_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOS_TEST_SECRET", "s3cr3t-from-env")
    assert secret_ref("${env:CHRONOS_TEST_SECRET}").resolve() == "s3cr3t-from-env"
    secret = tmp_path / "password"
    secret.write_text("s3cr3t-from-file\n")  # a mounted Secret's or `echo`'s newline is not the secret
    assert secret_ref(f"${{file:{secret}}}").resolve() == "s3cr3t-from-file"
    secret.write_text("rotated")
    assert secret_ref(f"${{file:{secret}}}").resolve() == "rotated"  # read anew by the next client


def test_a_reference_that_cannot_be_read_is_one_line_naming_it(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOS_TEST_UNSET", raising=False)
    with pytest.raises(InvalidInput, match=r"\$\{env:CHRONOS_TEST_UNSET\}: the environment variable"):
        secret_ref("${env:CHRONOS_TEST_UNSET}").resolve()
    with pytest.raises(InvalidInput, match="cannot read the secret's file"):
        secret_ref(f"${{file:{tmp_path / 'missing'}}}").resolve()
    big = tmp_path / "big"
    big.write_bytes(b"x" * (65 << 10))
    with pytest.raises(InvalidInput, match="is over 64 KiB"):
        secret_ref(f"${{file:{big}}}").resolve()


class _Settings(BaseModel):
    password: SecretReference


def test_a_model_dumps_the_reference_never_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOS_TEST_SECRET", "s3cr3t")
    settings = _Settings.model_validate({"password": "${env:CHRONOS_TEST_SECRET}"})
    shown = [settings.model_dump_json(), repr(settings), str(settings.password), str(settings.model_dump())]
    assert all("s3cr3t" not in text and "${env:CHRONOS_TEST_SECRET}" in text for text in shown), shown
    with pytest.raises(ValidationError, match="by reference only"):
        _Settings.model_validate({"password": "s3cr3t"})


def test_a_library_message_is_scrubbed_of_the_secrets_it_may_hold() -> None:
    assert scrub("login failed for chronos:s3cr3t@broker", ["s3cr3t"]) == "login failed for chronos:***@broker"
    assert scrub("nothing here", ["s3cr3t", ""]) == "nothing here"
