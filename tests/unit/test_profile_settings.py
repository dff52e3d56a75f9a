"""A profile's settings are written when it starts and read back by `--resume`: the same values come back,
settings written before they were typed (a dict dumped as JSON) still read, and a damaged record is one
line naming the field."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from chronos.errors import InvalidInput
from chronos.model import JobSpec
from chronos.profiler.settings import ProfileSettings

SPEC = JobSpec("vehicle-stats", "/jobs/v.py", ("--window", "5"), 2, (("state.backend.type", "hashmap"),))
VALUES = {"spec": asdict(SPEC), "workload": [[0.0, 60.0], [1000.0, 2000.0]], "interval_min_s": 2,
          "interval_max_s": 60, "loads": [1.0, 2.0], "faults": 2, "steady_s": 60.0, "seed": 0, "warmup_s": 30.0,
          "hold_s": 15.0, "timeout_s": 180.0, "max_recovery_s": 60.0, "max_p99_ms": 5000}


def test_settings_come_back_as_they_were_written() -> None:
    settings = ProfileSettings.from_json(json.dumps(VALUES), "p1")
    assert settings.spec == SPEC and settings.trace.rate_at(30) == pytest.approx(1500)
    assert ProfileSettings.from_json(settings.to_json(), "p1") == settings


def test_a_job_spec_reads_the_same_from_a_job_record_and_from_a_profile() -> None:
    older = {k: v for k, v in asdict(SPEC).items() if k not in ("jar", "entry_class")}
    assert JobSpec.from_json(older) == SPEC == ProfileSettings.from_json(json.dumps(VALUES), "p1").spec


def test_a_damaged_settings_record_is_one_line_naming_the_field() -> None:
    with pytest.raises(InvalidInput, match="profile p1 do not read: faults"):
        ProfileSettings.from_json(json.dumps({**VALUES, "faults": "many"}), "p1")
