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
