from chronos.flink.prometheus_scrape import PromSample, SourceOffsets, label_value, source_offsets, source_records_out


def test_label_values_follow_the_reporters_sanitizing() -> None:
    assert label_value("bench-tp-e10943") == "bench_tp_e10943"
    assert label_value("Source: KafkaSource-x") == "Source:_KafkaSource_x"


def test_source_records_add_up_over_subtasks_of_the_named_job_only() -> None:
    def sample(job: str, operator: str, value: float) -> PromSample:
        return PromSample("flink_taskmanager_job_task_operator_numRecordsOut",
                          (("job_name", job), ("operator_name", operator)), value)

    samples = [sample("demo_1", "Source:_KafkaSource_in", 10), sample("demo_1", "Source:_KafkaSource_in", 5),
               sample("demo_1", "LocalWindowAggregate_3_", 99), sample("other", "Source:_KafkaSource_in", 7)]
    assert source_records_out(samples, "demo-1") == 15


def _offset(kind: str, partition: str, value: float, job: str = "demo_1") -> PromSample:
    name = f"flink_taskmanager_job_task_operator_KafkaSourceReader_topic_partition_{kind}Offset"
    return PromSample(name, (("job_name", job), ("partition", partition), ("topic", "in")), value)


def test_offsets_sum_partitions_and_give_the_replay() -> None:
    samples = [_offset("current", "0", 120), _offset("current", "1", 80), _offset("committed", "0", 100),
               _offset("committed", "1", 50), _offset("current", "0", 999, job="other")]
    offsets = source_offsets(samples, "demo-1")
    assert offsets == SourceOffsets(current=200, committed=150) and offsets.replay == 50


def test_offsets_before_the_first_checkpoint_have_no_committed_part() -> None:
    """After a restart the source reports its position at once, committed offsets only after a checkpoint:
    lag must not wait for that."""
    offsets = source_offsets([_offset("current", "0", 120), _offset("committed", "0", -1)], "demo-1")
    assert offsets == SourceOffsets(current=120, committed=None) and offsets.replay is None
    assert source_offsets([], "demo-1") is None
