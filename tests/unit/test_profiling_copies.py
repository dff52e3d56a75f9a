"""A profiling copy shares nothing the live job writes, commits or reads."""

import pytest

from chronos.errors import InvalidInput
from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.shipped import program
from chronos.model import JobSpec
from chronos.profiler.copies import profiling_copy

parse_args = program("vehicle_stats_job").parse_args


def test_the_copy_gets_its_own_topics_group_transactions_and_name() -> None:
    live = demo_spec(DemoSettings(bootstrap="127.0.0.1:9092", window_s=3))
    copy = profiling_copy(live, "r7", "127.0.0.1:9092")
    a, b = parse_args(list(live.args)), parse_args(list(copy.spec.args))
    for field in ("input_topic", "output_topic", "group_id", "transactional_id_prefix", "job_name"):
        assert getattr(a, field) != getattr(b, field), field
        assert "r7" in getattr(b, field)
    assert (b.input_topic, b.output_topic) == (copy.input_topic, copy.output_topic)
    assert copy.live_input_topic == a.input_topic
    assert b.window_seconds == 3, "everything else is the live job's"
    assert copy.spec.name == b.job_name and copy.spec.python_file == live.python_file
    assert copy.spec.args.count("--input-topic") == 1


def test_flags_written_with_an_equals_sign_are_replaced_too() -> None:
    spec = JobSpec("j", "job.py", ("--input-topic=in", "--output-topic=out", "--bootstrap", "old:1"))
    copy = profiling_copy(spec, "r1", "new:2")
    assert "--input-topic=in" not in copy.spec.args and copy.input_topic == "in-profile-r1"
    assert parse_args(list(copy.spec.args)).bootstrap == "new:2"


def test_a_job_without_topic_flags_or_a_copy_section_is_refused_saying_what_to_add() -> None:
    with pytest.raises(InvalidInput, match=r"does not take --input-topic and --output-topic.*add to its job file `copy:"):
        profiling_copy(JobSpec("j", "job.py", ("--foo", "1")), "r1", "b:1")
