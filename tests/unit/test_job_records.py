from pathlib import Path

from chronos.model import CheckpointSettings, JobSpec
from chronos.stack.job_records import JobRecord, JobRecordStore


def test_a_record_survives_a_round_trip(tmp_path: Path) -> None:
    store = JobRecordStore(tmp_path)
    spec = JobSpec("demo", "/jobs/x.py", ("--a", "1"), parallelism=2, extra_config=(("k", "v"),))
    record = JobRecord("a" * 32, spec, CheckpointSettings(3000, "rocksdb", True), restored_from="file:/sp/1")
    store.save(record)
    assert store.get("a" * 32) == record
    assert store.all() == [record]
    assert store.get("b" * 32) is None


def test_a_job_is_followed_along_its_replacements_and_a_loop_of_records_ends(tmp_path: Path) -> None:
    store = JobRecordStore(tmp_path)
    spec = JobSpec("demo", "/jobs/x.py")
    a, b, c = "a" * 32, "b" * 32, "c" * 32
    store.save(JobRecord(a, spec, CheckpointSettings(3000), replaced_by=b))
    store.save(JobRecord(b, spec, CheckpointSettings(5000), replaced_by=c))
    store.save(JobRecord(c, spec, CheckpointSettings(8000)))
    assert store.current(a) == store.get(c), "--job OLD finds the job two retunes started since"
    assert store.current("d" * 32) is None
    store.save(JobRecord(c, spec, CheckpointSettings(8000), replaced_by=a))
    assert store.current(a) is not None, "records that name each other end, not hang"


def test_an_old_demo_record_says_its_topics_through_the_demo_programs_own_arguments() -> None:
    import pytest

    from chronos.errors import InvalidInput
    from chronos.stack.known_jobs import job_io

    old = JobRecord("a" * 32, JobSpec("demo", "/x.py", ("--bootstrap", "k:1", "--input-topic", "in")),
                    CheckpointSettings(1000))
    io = job_io(old)
    assert (io.bootstrap, io.input_topic, io.output_topic) == ("k:1", "in", "vehicle-stats")
    with pytest.raises(InvalidInput, match="no input/output description"):
        job_io(JobRecord("b" * 32, JobSpec("other", "/y.py", ("--unknown",)), CheckpointSettings(1000)))
