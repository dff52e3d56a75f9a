"""`chronos job retune` is the tuner's journaled retune by hand: killed with SIGKILL right after its savepoint,
the job is left stopped with that savepoint journaled, and the next `chronos job retune` of the same job
finishes it from that very savepoint: one running copy, the new interval verified, nothing lost or doubled."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from chronos.flink.rest import FlinkRestClient
from chronos.jobs.bounded_input import ExperimentInput
from chronos.stack.state import StackState
from chronos.tune.journal import TuneJournal
from tests.conftest import wait_until
from tests.support.cli import chronos, submit_demo
from tests.support.tuning import cancel_all, job_name

REPOSITORY = Path(__file__).parents[2]

def test_a_manual_retune_killed_after_its_savepoint_is_finished_by_the_next_from_that_savepoint(
        stack: StackState, flink: FlinkRestClient, tmp_path: Path) -> None:
    sd = ["--stack-dir", stack.stack_dir]
    db = tmp_path / "journal.db"
    job_id = submit_demo(stack, "3s")
    name = job_name(stack, job_id)
    counted = ExperimentInput(stack.bootstrap, "vehicle-events", "vehicle-stats", rate=500, vehicles=50,
                              run_id=uuid.uuid4().hex[:6])
    retune: subprocess.Popen[str] | None = None
    try:
        counted.start()
        wait_until(lambda: flink.checkpoints(job_id).counts.completed >= 2, 60, what="checkpoints of counted input")
        retune = subprocess.Popen(
            [sys.executable, "-m", "tests.support.held_after_savepoint", "120", "job", "retune", job_id, "--interval",
             "4s", "--db", str(db), "--json", *sd],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, cwd=REPOSITORY)
        deadline = time.monotonic() + 120
        entry = None
        while time.monotonic() < deadline and retune.poll() is None:
            if db.exists():
                journal = TuneJournal(db)
                entry = next((r for r in journal.retunes() if r.step == "savepoint"), None)
                journal.close()
                if entry is not None:
                    break
            time.sleep(0.1)
        assert entry is not None and entry.savepoint, f"no savepoint journaled: {retune.stderr.read() if retune.stderr else ''}"
        retune.kill()
        retune.wait(10)
        flink.wait_for_state(job_id, lambda d: d.state == "FINISHED", 30, "FINISHED")
        assert not [j for j in flink.jobs() if j.name == name and j.state == "RUNNING"], "killed: the job is stopped"

        dry = chronos("job", "retune", job_id, "--interval", "4s", "--db", str(db), "--dry-run", *sd)
        assert dry.returncode == 0 and f"finish retune {entry.retune_id}" in dry.stdout, dry.stdout + dry.stderr
        again = chronos("job", "retune", job_id, "--interval", "4s", "--db", str(db), "--json", *sd, timeout=240)
        assert again.returncode == 0, again.stderr
        result = json.loads(again.stdout)
        assert result["resumed"] is True and result["outcome"] == "verified" and result["savepoint"] == entry.savepoint
        new = result["new_job_id"]
        assert [j.jid for j in flink.jobs() if j.name == name and j.state == "RUNNING"] == [new], "one running copy"
        restored = flink.checkpoints(new).latest.restored
        assert restored is not None and restored.external_path == entry.savepoint, "restored from that very savepoint"
        assert flink.checkpoint_config(new).interval == 4000
        journal = TuneJournal(db)
        assert journal.retune(entry.retune_id).step == "verified"
        journal.close()
        replaced = chronos("job", "retune", job_id, "--interval", "5s", "--db", str(db), *sd)
        assert replaced.returncode == 1 and "already replaced" in replaced.stderr
        delivery = counted.finish(timeout_s=120)
        assert delivery.ok and delivery.input_events > 1_000, delivery.summary()
    finally:
        if retune is not None and retune.poll() is None:
            retune.kill()
            retune.wait(10)
        counted.close()
        cancel_all(flink, name)
