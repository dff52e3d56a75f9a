"""A job file says how a profiling copy of its job is made: which program.vars carry the input topic(s), the
output topic(s), the consumer group, the transactional-id prefix (and the name); a copy gets its own values for
them, whatever the program kind and however its arguments take them (positional, flags, SQL variables). A file
that names a variable the program does not use, or none at all, is refused in one line saying what to add."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from chronos.errors import InvalidInput
from chronos.jobs.job_file import load_job_file
from chronos.jobs.shipped import shipped
from chronos.model import JobSpec
from chronos.profiler.copies import profiling_copy

CLICKS = """
name: sessions
program:
  python: job.py
  args: ["${clicks}", "${orders}", "${out}", --group, "${group}", "--txn=${txn}", --broker, "${bootstrap}"]
  vars: {clicks: web-clicks, orders: web-orders, out: sessions, group: sessions-live, txn: sessions-tx}
copy:
  input-topics: [clicks, orders]
  output-topics: [out]
  group-id: group
  transactional-id-prefix: txn
io: {bootstrap: "${bootstrap}", input-topic: web-clicks, output-topic: sessions}
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "job.py").write_text("")
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_a_python_job_with_positional_topics_gets_a_copy_of_its_own_for_every_part(tmp_path: Path) -> None:
    spec, _ = load_job_file(write(tmp_path, CLICKS), {"bootstrap": "live:9092"})
    assert spec.args[:3] == ("web-clicks", "web-orders", "sessions")
    copy = profiling_copy(spec, "r1", "shared:9092")
    args = copy.spec.args
    assert args == ("web-clicks-profile-r1", "web-orders-profile-r1", "sessions-profile-r1", "--group",
                    "chronos-profile-r1", "--txn=chronos-profile-r1", "--broker", "shared:9092")
    assert copy.input_topics == ("web-clicks-profile-r1", "web-orders-profile-r1")
    assert copy.live_input_topics == ("web-clicks", "web-orders") and copy.output_topics == ("sessions-profile-r1",)
    assert set(copy.topics) == {"web-clicks-profile-r1", "web-orders-profile-r1", "sessions-profile-r1"}
    assert not set(args) & {"web-clicks", "web-orders", "sessions", "sessions-live", "sessions-tx"}, "nothing live"


def test_the_shipped_sql_job_gets_its_copy_through_its_sql_variables_and_its_own_name() -> None:
    path = shipped("speeding_zones.yaml")
    spec, _ = load_job_file(path, {"bootstrap": "live:9092"})
    copy = profiling_copy(spec, "r2", "shared:9092")
    args = copy.spec.args
    assert "input_topic=vehicle-events-profile-r2" in args and "output_topic=zone-counts-profile-r2" in args
    assert "group_id=chronos-profile-r2" in args and "transactional_id_prefix=chronos-profile-r2" in args
    assert "bootstrap=shared:9092" in args
    assert args[args.index("--job-name") + 1] == copy.spec.name == "chronos-speeding-zones-profile-r2"
    assert not [a for a in args if a.endswith("=vehicle-events") or a.endswith("=chronos-zones")]


def test_the_copy_information_survives_the_job_record(tmp_path: Path) -> None:
    spec, _ = load_job_file(write(tmp_path, CLICKS), {"bootstrap": "live:9092"})
    again = JobSpec.from_json(json.loads(json.dumps(asdict(spec))))
    assert again == spec and profiling_copy(again, "r3", "b:1").input_topic == "web-clicks-profile-r3"


@pytest.mark.parametrize(("change", "complaint"), [
    (("group-id: group", "group-id: nosuch"), "copy names group-id 'nosuch', which is not in program.vars"),
    (('"--txn=${txn}", ', ""), "copy names transactional-id-prefix 'txn', but no program argument uses ${txn}"),
    (("input-topics: [clicks, orders]", "input-topics: []"), "input-topics"),
    (("  transactional-id-prefix: txn\n", "  transactional-id-prefix: txn\n  event-time-fields: ['$..[']\n"),
     "copy: event-time field '$..[' is not a JSON path"),
])
def test_a_copy_section_that_cannot_work_is_one_line(tmp_path: Path, change: tuple[str, str], complaint: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(complaint)):
        load_job_file(write(tmp_path, CLICKS.replace(*change)), {"bootstrap": "live:9092"})


def test_a_job_file_without_a_copy_section_is_refused_for_profiling_saying_what_to_add(tmp_path: Path) -> None:
    spec, _ = load_job_file(write(tmp_path, CLICKS.split("copy:")[0] + "io:" + CLICKS.split("io:")[1]),
                            {"bootstrap": "live:9092"})
    with pytest.raises(InvalidInput, match=r"no copy: section in its job file.*copy: \{input-topics"):
        profiling_copy(spec, "r4", "b:1")


def test_the_shipped_two_topic_job_names_its_event_times_and_is_measured_on_both_inputs() -> None:
    spec, io = load_job_file(shipped("shop_payments.yaml"), {"bootstrap": "live:9092"})
    assert spec.event_time_fields == ("$.placed_at", "$.payment.at_ms")
    assert io.input_topics == ("shop-orders", "shop-payments") and io.timestamp_field == "paid_ms"
    copy = profiling_copy(spec, "r5", "b:1")
    assert copy.live_input_topics == ("shop-orders", "shop-payments")
    assert copy.input_topics == ("shop-orders-profile-r5", "shop-payments-profile-r5")
    assert JobSpec.from_json(json.loads(json.dumps(asdict(spec)))) == spec


def test_a_job_record_keeps_every_input_topic(tmp_path: Path) -> None:
    from chronos.model import CheckpointSettings
    from chronos.stack.job_records import JobRecord, JobRecordStore

    spec, io = load_job_file(shipped("shop_payments.yaml"), {"bootstrap": "live:9092"})
    store = JobRecordStore(tmp_path / "jobs")
    store.save(JobRecord("a" * 32, spec, CheckpointSettings(5000), io=io))
    record = store.get("a" * 32)
    assert record is not None and record.io == io and record.io.more_input_topics == ("shop-payments",)


def test_a_job_naming_a_transactional_id_prefix_commits_its_output_on_checkpoints(tmp_path: Path) -> None:
    spec, _ = load_job_file(write(tmp_path, CLICKS), {"bootstrap": "live:9092"})
    assert spec.commits_on_checkpoint, "its copy section names the prefix"
    plain = CLICKS.replace("  transactional-id-prefix: txn\n", "")
    spec, _ = load_job_file(write(tmp_path, plain), {"bootstrap": "live:9092"})
    assert not spec.commits_on_checkpoint, "no prefix: nothing says its output waits for a commit"
    assert JobSpec("demo", "vehicle_stats_job.py", ("--transactional-id-prefix", "t")).commits_on_checkpoint
    assert JobSpec("demo", "vehicle_stats_job.py", ("--transactional-id-prefix=t",)).commits_on_checkpoint
