"""Finding a TaskManager's Python UDF workers in a /proc laid out by the test."""

from pathlib import Path

from chronos.stack.faults import python_workers
from chronos.stack.state import StackState


def fake_proc(root: Path, processes: dict[int, tuple[int, str]]) -> Path:
    for pid, (ppid, argv) in processes.items():
        d = root / str(pid)
        d.mkdir(parents=True)
        name = argv.split()[0].rsplit("/", 1)[-1]
        (d / "stat").write_text(f"{pid} ({name}) S {ppid} 1 1 0 -1")
        (d / "cmdline").write_bytes(argv.replace(" ", "\0").encode() + b"\0")
    return root


def test_only_the_beam_worker_below_a_taskmanager_counts(tmp_path: Path) -> None:
    runner = "bash /v/lib/python3.11/site-packages/pyflink/bin/pyflink-udf-runner.sh"
    worker = "/v/bin/python -m pyflink.fn_execution.beam.beam_boot --id=1-1"
    proc = fake_proc(tmp_path, {
        100: (1, "java -cp flink TaskManagerRunner"),
        101: (100, runner), 102: (101, worker), 103: (101, "tee /tmp/boot.log"),
        200: (1, worker),  # a worker of some other program: not below a TaskManager
    })
    state = StackState(stack_dir="/s", started_at=0, kafka_port=1, kafka_controller_port=2, kafka_pid=None,
                       flink_rest_port=3, flink_rpc_port=4, prometheus_port_base=5, jobmanager_pid=9,
                       taskmanager_pids=(100,), slots=1, kafka_lib="", connector_jar="")
    assert python_workers(state, proc) == [102]
