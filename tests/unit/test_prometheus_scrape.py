from chronos.flink.prometheus_scrape import PromSample, label_value, source_records_out


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
