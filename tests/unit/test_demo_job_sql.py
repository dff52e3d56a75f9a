"""The demo job's SQL, rendered without Flink: the guarantees the job promises live in it."""

from chronos.jobs.demo import DemoSettings, demo_spec
from chronos.jobs.fleet import FLUSH_VEHICLE
from chronos.jobs.shipped import program

job = program("vehicle_stats_job")


def test_sink_is_exactly_once_and_covers_counts_and_creation_time() -> None:
    args = job.parse_args(["--bootstrap", "b:1", "--connector-jar", "/c.jar"])
    ddl, insert = job.statements(args)
    sink = ddl[1]
    assert "'sink.delivery-guarantee' = 'exactly-once'" in sink
    assert "event_count BIGINT" in sink and "max_created_ms BIGINT" in sink
    assert "WATERMARK FOR ts" in ddl[0]
    assert "COUNT(*)" in insert and "MAX(created_ms)" in insert


def test_flush_events_are_dropped_before_aggregation() -> None:
    assert job.FLUSH_VEHICLE == FLUSH_VEHICLE
    ddl, _ = job.statements(job.parse_args(["--bootstrap", "b:1", "--connector-jar", "/c.jar"]))
    assert f"vehicle_id <> '{FLUSH_VEHICLE}'" in ddl[2]


def test_demo_spec_passes_topics_and_a_per_topic_transaction_prefix() -> None:
    spec = demo_spec(DemoSettings(bootstrap="b:1", connector_jar="/c.jar", input_topic="in", output_topic="out"))
    args = job.parse_args(list(spec.args))
    assert (args.input_topic, args.output_topic) == ("in", "out")
    assert args.transactional_id_prefix.endswith("-out")
    assert spec.python_file.endswith("vehicle_stats_job.py")
