"""Every hostile or careless input of the sweep (sweep_cases.py; surface_cases.py, for the surfaces added since, runs
through the same judge in test_surface_sweep.py), fed through the CLI as a user would, with a timeout: refused in one
line that names the problem (or, where nothing is wrong with the command, said or shown as plain text), within 5 s
(or the deadline the case is about), with no file created or deleted outside the scratch directory, no process
signalled that chronos did not start, and no secret in any output."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.security.surface_cases import KUBE_TOKEN
from tests.security.sweep_cases import ENV_SECRET, SECRET, Case, Scratch, cases
from tests.support.cli import assert_one_line_error, chronos
from tests.support.hostile_flink import hostile_flink
from tests.support.processes import untouched

CASES = cases()
OUTCOMES: Counter[str] = Counter()
_RAW_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _tree(root: Path, skip: Path | None = None) -> set[str]:
    found = set()
    for directory, dirs, files in os.walk(root):
        if skip is not None and Path(directory) == skip:
            dirs[:] = []
            continue
        found.update(os.path.join(directory, name) for name in dirs + files)
    return found


def _outside(tmp_path: Path, scratch: Path) -> set[str]:
    """What exists outside the scratch directory that a hostile input could reach: the rest of the test's own
    directory (the victim folder among it) and /dev (where `--db /dev/null` once left a journal)."""
    return _tree(tmp_path, skip=scratch) | {f"/dev/{name}" for name in os.listdir("/dev")}


def test_the_sweep_covers_every_kind_of_input_the_issue_names() -> None:
    ids = {case.id for case in CASES}
    assert len(ids) == len(CASES), "case ids are unique"
    for kind in ("reply-trickles", "reply-of-100-MB", "nested", "not-utf8", "fifo", "state-owned-by-another-user",
                 "pid-minus-one", "superscript", "db-of-another-program", "db-dev-null", "schema-version",
                 "job-id-with-newline", "markup", "escapes", "job-record-cut-short", "password-with", "window-negative",
                 "parallelism", "outside-the-folder", "topic", "sql-var-as-identifier", "negative"):
        assert any(kind in case_id for case_id in ids), kind


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_input_is_one_line_fast_and_touches_nothing_outside(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def run_case(case: Case, tmp_path: Path) -> None:
    """The case through the CLI, judged as the module says (tests/security/test_surface_sweep.py runs it too)."""
    if case.root_only and os.geteuid() != 0:
        pytest.skip("needs root: a file owned by another user")
    scratch = Scratch(tmp_path / "scratch", tmp_path / "victim")
    for folder in (scratch.root, scratch.victim, scratch.root / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    (scratch.victim / "keep.txt").write_text("a file chronos must not touch\n")
    with hostile_flink(case.answers) as server:
        scratch.url = server.url
        try:
            made = case.setup(scratch) if case.setup is not None else None
            before = _outside(tmp_path, scratch.root)
            argv = [part.format(url=server.url, file=made, root=scratch.root, stack=scratch.stack, victim=scratch.victim,
                                hostport=server.url.removeprefix("http://")) for part in case.argv]
            env = {"PATH": os.environ["PATH"], "HOME": str(scratch.root / "home"), "LANG": "C.UTF-8",
                   "CHRONOS_STACK_DIR": str(scratch.stack), "CHRONOS_SWEEP_TOKEN": ENV_SECRET, **case.env}
            started = time.monotonic()
            done = chronos(*argv, env=env, timeout=60, cwd=scratch.root)
            took = time.monotonic() - started
            output = done.stdout + done.stderr
            assert took < case.within_s, f"{case.id} took {took:.1f} s: {output[-500:]}"
            assert "Traceback" not in output and "unexpected" not in output, output[-2000:]
            for secret in (SECRET, ENV_SECRET, KUBE_TOKEN, *case.absent):
                assert secret not in output, f"a secret was printed: {output[-1000:]}"
            if case.outcome == "refused":
                assert_one_line_error(done, *case.needles)
            else:
                assert done.returncode == 0, output[-2000:]
                for needle in case.needles:
                    assert needle in output, output[-2000:]
                if case.outcome == "shown":
                    assert not _RAW_CONTROLS.search(output), repr(output[-500:])
            assert _outside(tmp_path, scratch.root) == before, "a file outside the scratch directory was created or deleted"
            assert all(untouched(proc) for proc in scratch.strangers), "a process chronos did not start was signalled"
            if case.after is not None:
                case.after(scratch)
            OUTCOMES[case.outcome] += 1
        finally:
            for undo in scratch.cleanup:
                undo()
            for proc in scratch.strangers:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(10)
