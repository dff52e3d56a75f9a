"""The demo job as a JobSpec: chronos knows how to (re)start it."""

from __future__ import annotations

from dataclasses import dataclass

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import InvalidInput
from chronos.jobs.shipped import shipped
from chronos.model import JobSpec, check_bootstrap, check_kafka_name

JOB_FILE = shipped("flink-programs/vehicle_stats_job.py")


@dataclass(frozen=True)
class DemoSettings:
    bootstrap: str
    connector_jar: str | None = None  # None: the cluster has the connector on its classpath
    input_topic: str = "vehicle-events"
    output_topic: str = "vehicle-stats"
    name: str = "chronos-vehicle-stats"
    parallelism: int = 2
    window_s: int = 5
    group_id: str = "chronos-demo"
    python_udf: bool = False  # a Python worker per TaskManager (for the python-worker fault)
    kafka: KafkaSecurity = PLAINTEXT  # a secured broker: the program's own login (secrets as references)


def demo_spec(s: DemoSettings) -> JobSpec:
    """The spec; its values go into the job's SQL, so each is checked here, before any submission."""
    check_bootstrap(s.bootstrap)
    for what, value in (("input topic", s.input_topic), ("output topic", s.output_topic), ("group id", s.group_id),
                        ("job name", s.name)):
        check_kafka_name(what, value)
    args: tuple[str, ...] = (
        "--bootstrap", s.bootstrap,
        "--input-topic", s.input_topic,
        "--output-topic", s.output_topic,
        "--group-id", s.group_id,
        "--transactional-id-prefix", f"{s.name}-{s.output_topic}",
        "--window-seconds", str(s.window_s),
        "--job-name", s.name,
    )
    if s.connector_jar:
        args += ("--connector-jar", s.connector_jar)
    if s.python_udf:
        args += ("--python-udf",)
    try:
        args += s.kafka.program_args()
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    return JobSpec(name=s.name, python_file=str(JOB_FILE), args=args, parallelism=s.parallelism)
