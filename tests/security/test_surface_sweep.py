"""The hostile and careless inputs of the surfaces added after the first sweep (surface_cases.py: Kubernetes,
secrets said back, compressed and Prometheus replies, SQL variable names, numbers, stores read back, text), judged as
the first sweep's are (test_hostile_sweep.run_case): one line naming the problem within 5 s or the deadline the case is
about, nothing created or deleted outside the scratch directory, no stranger signalled, no secret printed. A module of
its own so that the suite's two workers can share the sweeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.surface_cases import surface_cases
from tests.security.sweep_cases import Case
from tests.security.test_hostile_sweep import run_case

CASES = surface_cases()


def test_the_surface_sweep_covers_every_class_of_the_third_sweep() -> None:
    """Issue 61's classes: privilege, secrets said back, SQL variable names, compressed replies, hangs, Kubernetes names
    and shapes, numbers without bounds, stores read back, text; and the misleading lines."""
    ids = {case.id for case in CASES}
    assert len(ids) == len(CASES), "case ids are unique"
    classes = {"privilege": ("linked-services-dir",), "secrets": ("echoed", "token-as-a-job-name"),
               "sql": ("sql-var-name",), "compression": ("gzip", "deflate", "brotli", "zstd"),
               "hangs": ("fifo", "trickles", "endless", "dev-zero", "300-annotated"),
               "kubernetes": ("discover-dot-dot", "jobs-file-deployment", "kube-items", "kube-job-id", "kubeconfig-not",
                              "listed-twice", "40-digits"),
               "numbers": ("policy-interval", "experiment-", "rate-trace", "collect-every", "nan-", "1e400",
                           "snapshot", "safety-factor"),
               "stores": ("profile-store", "journal-", "names-a-file"),
               "text": ("surrogate", "bidi", "non-ascii", "control", "nul", "does-not-resolve", "field-twice"),
               "misleading": ("not-http", "without-a-stack")}
    for name, kinds in classes.items():
        for kind in kinds:
            assert any(kind in case_id for case_id in ids), f"{name}: no case {kind}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_input_of_a_new_surface_is_one_line_fast_and_touches_nothing_outside(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
