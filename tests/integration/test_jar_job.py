"""A jar job (Java Table API, built here from jobs/jar-job/ against the wheel's Flink), described by a
job file: chronos submits it, and restarts it from a savepoint with a new interval, over REST."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from chronos.flink.rest import FlinkRestClient
from chronos.flink.submit import content_named
from chronos.jobs.shipped import shipped
from chronos.stack.state import StackState
from tests.support.cli import chronos

JAR_JOB = """
name: jar-speeding-zones-{suffix}
program:
  jar: {jar}
  entry-class: chronos.jobs.SqlJob
  args: [{sql}, "bootstrap=${{bootstrap}}", input_topic=vehicle-events, output_topic=jar-zones-{suffix},
         group_id=jar-zones-{suffix}, transactional_id_prefix=jar-zones-{suffix}]
parallelism: 1
io:
  bootstrap: "${{bootstrap}}"
  input-topic: vehicle-events
  output-topic: jar-zones-{suffix}
"""


def build_jar(out: Path) -> Path:
    script = shipped("jar-job/build.sh")
    built = subprocess.run(["bash", str(script), str(out)], capture_output=True, text=True,
                           env={"CHRONOS_PYTHON_BIN": sys.executable, "PATH": "/usr/bin:/bin"})
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip().splitlines()[-1])


def test_a_jar_job_is_submitted_and_retuned_from_its_savepoint(stack: StackState, flink: FlinkRestClient,
                                                              tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    suffix = uuid.uuid4().hex[:6]
    sql = shipped("speeding_zones.sql")
    file = tmp_path / "jar-job.yaml"
    jar = build_jar(tmp_path / "build")
    file.write_text(JAR_JOB.format(suffix=suffix, jar=jar, sql=sql))
    submitted = chronos("job", "submit", "--file", str(file), "--interval", "10s", "--json", *sd)
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    new_job = None
    try:
        assert flink.job(job_id).name == f"jar-speeding-zones-{suffix}"
        assert content_named(jar) in flink.uploaded_jars().values(), "uploaded under its content hash"
        retuned = chronos("job", "retune", job_id, "--interval", "7s", "--json", *sd, timeout=180)
        assert retuned.returncode == 0, retuned.stderr
        result = json.loads(retuned.stdout)
        new_job = result["new_job_id"]
        assert flink.job(new_job).state == "RUNNING" and flink.checkpoint_config(new_job).interval == 7000
        restored = flink.checkpoints(new_job).latest.restored
        assert restored is not None and restored.external_path == result["savepoint"]
    finally:
        for jid in (job_id, new_job):
            if jid and flink.job(jid).state == "RUNNING":
                flink.cancel(jid)
