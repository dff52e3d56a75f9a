"""Strings from outside (Flink, Kafka, a file, a URL a user typed) are shown, never obeyed: no Rich markup, no
terminal control sequence, no password; and an id is one only if all of it is."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from chronos.errors import InvalidInput, is_job_id, redact
from chronos.model import check_bootstrap, check_kafka_name, check_url
from chronos.terminal_text import TerminalConsole, shown, styled

JOB = "0123456789abcdef0123456789abcdef"


def _printed(*renderables: object) -> str:
    buffer = io.StringIO()
    console = TerminalConsole(file=buffer, force_terminal=False, width=200, soft_wrap=True)
    console.print(*renderables)
    return buffer.getvalue()


def test_markup_in_a_string_is_printed_as_it_is() -> None:
    assert _printed("[/oops] [bold]x[/bold] :smile:").strip() == "[/oops] [bold]x[/bold] :smile:"
    table = Table("name")
    table.add_row("[/oops]")
    assert "[/oops]" in _printed(table)


def test_control_characters_are_written_out_wherever_they_are_printed() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J\x9b2J\x00"
    expected = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\x00"
    assert shown(hostile) == expected and shown("a\tb\nc") == "a\tb\nc"
    table = Table("name", title=hostile)
    table.add_row(hostile)
    printed = _printed(table, hostile, styled(("error:", "bold red"), " " + hostile))
    assert "\x1b" not in printed and "\x07" not in printed and "\x9b" not in printed
    assert printed.count(expected) == 4


@pytest.mark.parametrize(("text", "hidden"), [
    ("cannot reach http://alice:s3cr3t@h:8081 (x)", "s3cr3t"),
    ("cannot reach http://admin:SEK@RETpw777@host/x", "RETpw777"),
    ("https://u:p%40ss@h and then http://v:w@k", "p%40ss"),
])
def test_credentials_in_a_url_are_never_repeated(text: str, hidden: str) -> None:
    assert hidden not in redact(text) and "***@" in redact(text)


@pytest.mark.parametrize("url", ["http://admin:SEK@RETpw777@host", "http://admin:SEK RETpw777@host",
                                 "http://admin:SEK/RETpw777@host", "ftp://u:RETpw777@h", "http://h:99999",
                                 "http://h/a@RETpw777", "http://h\n", "http://", "javascript:alert(1)"])
def test_a_url_chronos_would_misread_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_url(url, "--rest-url")
    assert "RETpw777" not in str(refused.value) and "--rest-url is not a URL chronos takes" in str(refused.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8081", "https://flink.example.com/api/", "http://u:p%40ss@h:1",
                                 "http://[::1]:8081", "http://my-flink-rest:8081"])
def test_plain_urls_pass(url: str) -> None:
    assert check_url(url, "--rest-url") == url


def test_an_id_or_a_name_is_one_only_whole() -> None:
    assert is_job_id(JOB)
    for crafted in (JOB + "\n", "\n" + JOB, JOB.upper(), JOB[:-1], JOB + "0", "../" + JOB):
        assert not is_job_id(crafted), repr(crafted)
    for bad in ("a\n", ".", "..", "../x", "a/b\\c", "t" * 250, ""):
        with pytest.raises(InvalidInput, match="invalid topic"):
            check_kafka_name("topic", bad)
    for bad in ("k:1\n", "k:1,", "k:99999", "k"):
        with pytest.raises(InvalidInput, match="invalid Kafka bootstrap"):
            check_bootstrap(bad)
