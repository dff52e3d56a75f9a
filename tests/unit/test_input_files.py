"""The one reader of files: a FIFO, a device or a directory is refused before anything blocks on it, a file is
read no further than its cap, text must be UTF-8, YAML and JSON nest at most 64 deep (refused fast however deep
they go), and a state file is believed only while it is chronos's user's own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.input_files import (
    UntrustedFile,
    load_json,
    load_yaml,
    read_mapping,
    read_own_json,
    read_structured,
    read_text,
    require_private,
    write_private,
)


def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "policy.yaml"
    os.mkfifo(fifo)  # nobody writes it: an open() for reading would wait for ever
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="is a FIFO"):
        read_text(fifo, "tune policy")
    assert time.monotonic() - started < 1.0
    with pytest.raises(InvalidInput, match="is a device"):
        read_text(Path("/dev/zero"), "tune policy")
    with pytest.raises(InvalidInput, match="is a directory"):
        read_text(tmp_path, "tune policy")
    with pytest.raises(InvalidInput, match=r"cannot read tune policy .*missing"):
        read_text(tmp_path / "missing", "tune policy")


def test_a_file_is_read_no_further_than_its_cap(tmp_path: Path) -> None:
    big = tmp_path / "experiment.json"
    big.write_bytes(b" " * ((1 << 20) + 1))
    with pytest.raises(InvalidInput, match="is over 1024 KiB"):
        read_structured(big, "experiment")
    assert read_text(big, "x", max_bytes=2 << 20).isspace()


@pytest.mark.parametrize(("content", "shown"), [("caf\xe9".encode("latin-1"), "byte 0xe9 at offset 3"),
                                                (bytes(range(128, 256)), "byte 0x80 at offset 0")])
def test_text_must_be_utf8(tmp_path: Path, content: bytes, shown: str) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=f"is not UTF-8 text \\({shown}\\)"):
        read_structured(path, "experiment")


@pytest.mark.parametrize("text", ["a: " + "[" * 65 + "]" * 65,  # flow
                                  "a: " + "{b: " * 65 + "}" * 65,
                                  "".join(" " * i + "- \n" for i in range(66)),  # block: 65 sequences in sequences
                                  "a: " + "[" * 100_000 + "]" * 100_000])  # 200 KB, under the cap
def test_yaml_nested_past_64_is_refused_fast(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="nests deeper than 64 levels"):
        load_yaml(text, "tune policy p.yaml")
    assert time.monotonic() - started < 1.0


def test_yaml_nested_64_deep_and_brackets_in_strings_and_comments_read() -> None:
    assert load_yaml("a: " + "[" * 63 + "]" * 63, "x") is not None  # the mapping is the first of 64 levels
    assert load_yaml("a: '" + "[" * 100 + "'  # " + "{" * 100 + "\n", "x") == {"a": "[" * 100}


def test_json_nested_past_64_or_not_strict_is_refused() -> None:
    with pytest.raises(InvalidInput, match="nests deeper than 64"):
        load_json("[" * 65 + "]" * 65, "x")
    with pytest.raises(InvalidInput, match="nests deeper"):
        load_json("[" * 100_000 + "]" * 100_000, "x")
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(InvalidInput, match="not valid JSON"):
            load_json(f'{{"a": {constant}}}', "x")


def test_a_yaml_integer_of_more_digits_than_python_reads_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("recovery_s: " + "9" * 5000 + "\n")
    with pytest.raises(InvalidInput, match="an integer of over 4300 digits"):
        read_mapping(path, "tune policy", "keys")


def test_a_state_file_is_trusted_only_while_it_is_chronos_s_own(tmp_path: Path) -> None:
    folder = tmp_path / "stack"
    folder.mkdir(mode=0o700)
    state = folder / "stack.json"
    write_private(state, "{}")
    assert oct(state.stat().st_mode & 0o777) == "0o600" and read_own_json(state, "state") == {}
    state.chmod(0o602)
    with pytest.raises(UntrustedFile, match="writable by other users \\(mode 602\\)"):
        read_own_json(state, "state")
    state.chmod(0o620)  # the group is chronos's user's own
    assert read_own_json(state, "state") == {}
    state.chmod(0o600)
    folder.chmod(0o777)
    with pytest.raises(UntrustedFile, match=f"{folder} is writable by other users"):
        require_private(state, "state")
    folder.chmod(0o1777)  # sticky, as /tmp: nobody else can swap the file
    require_private(state, "state")
    folder.chmod(0o700)
    (folder / "link.json").symlink_to(state)
    with pytest.raises(UntrustedFile, match="is a symlink"):
        require_private(folder / "link.json", "state")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a file owned by another user")
def test_a_state_file_of_another_user_is_not_trusted(tmp_path: Path) -> None:
    state = tmp_path / "stack.json"
    write_private(state, "{}")
    os.chown(state, 0, 65534)
    state.chmod(0o620)  # writable by a group chronos's user is not in
    with pytest.raises(UntrustedFile, match="writable by other users \\(mode 620\\)"):
        read_own_json(state, "state")
    os.chown(state, 65534, 65534)
    with pytest.raises(UntrustedFile, match="belongs to uid 65534"):
        read_own_json(state, "state")
