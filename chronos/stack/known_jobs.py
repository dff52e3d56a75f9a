"""Which job a command acts on, and where it reads and writes: the jobs chronos submitted or adopted here (their
records) matched against what the cluster runs. A job chronos has no record of cannot be resubmitted, so every
lookup that may lead to a restart refuses it in one line before anything is touched."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import ChronosError, InvalidInput
from chronos.flink.rest import FlinkRestClient
from chronos.jobs.shipped import program
from chronos.jobs.topic_offsets import TopicEndOffsets
from chronos.model import TERMINAL_STATES, CheckpointSettings, JobIO, JobSpec
from chronos.stack.job_records import JobRecord, JobRecordStore
from chronos.tune.journal import Journal
from chronos.tune.retune import TunedJob


def job_io(record: JobRecord) -> JobIO:
    """Where the job reads and writes: on its record, or (demo records from before) in its arguments."""
    if record.io is not None:
        return record.io
    try:
        args = program("vehicle_stats_job").parse_args(list(record.spec.args))
    except SystemExit as exc:
        raise InvalidInput(f"job {record.job_id} has no input/output description; submit it with "
                           "`chronos job submit --file` or register it with `chronos job adopt`") from exc
    return JobIO(args.bootstrap, args.input_topic, args.output_topic, kafka=_program_kafka(args))


def _program_kafka(args: Any) -> KafkaSecurity:
    """The demo program's own Kafka login, for chronos's clients of the same broker."""
    if args.kafka_security_protocol in ("", "PLAINTEXT"):
        return PLAINTEXT
    return KafkaSecurity(protocol=args.kafka_security_protocol, sasl_mechanism=args.kafka_sasl_mechanism or None,
                         username=args.kafka_username or None, password=args.kafka_password or None,
                         ca_file=args.kafka_ca_file or None)


def chronos_job(client: FlinkRestClient, records: JobRecordStore, job_id: str | None) -> JobRecord:
    """The job to act on: the one named, or the single running job chronos submitted here."""
    if job_id is None:
        running = {j.jid for j in client.jobs() if j.state == "RUNNING"}
        mine = [r for r in records.all() if r.job_id in running]
        if len(mine) != 1:
            raise InvalidInput(f"{len(mine)} running jobs were submitted by chronos here; name one with --job")
        return mine[0]
    record = records.get(job_id)
    if record is None:
        raise InvalidInput(f"job {job_id} was not submitted by chronos here: its topics are unknown")
    client.job(job_id)
    return record


def job_to_tune(client: FlinkRestClient, records: JobRecordStore, journal: Journal, job_id: str | None,
                where: str) -> JobRecord | None:
    """The job to tune: one a crashed tuner left mid-retune comes first; else the one named (followed through its
    replacements), or the single running job chronos submitted here. `where`: the records' place, said if missing.
    None: the job named runs, but chronos has no record of it (submitted elsewhere, no job file adopted): it can be
    paced from what Flink says of it, not restarted (`unrecorded_job`)."""
    pending = [r for r in journal.retunes() if not r.finished
               and (job_id is None or job_id in (r.old_job_id, r.new_job_id))]
    if pending:
        record = records.get(pending[-1].old_job_id)
        if record is None:
            raise InvalidInput(f"an unfinished retune of {pending[-1].old_job_id} is journaled, but its job spec "
                               f"is not in {where}")
        return record
    if job_id is not None:
        record = records.current(job_id)
        state = client.job(job_id if record is None else record.job_id).state  # an unknown job: the client's line
        if record is None:
            if state != "RUNNING":
                raise InvalidInput(f"job {job_id} is {state}, not RUNNING; nothing to tune")
            return None
        if state != "RUNNING":
            raise InvalidInput(f"job {record.job_id} is {state}, not RUNNING; nothing to tune")
        return record
    return chronos_job(client, records, None)


def unrecorded_job(client: FlinkRestClient, job_id: str) -> JobRecord:
    """A running job chronos has no record of, as far as Flink describes it: its name and configured interval. Its
    spec names no program (so nothing can resubmit it) and it has no io (so its topics are unknown)."""
    name = client.job(job_id).name
    return JobRecord(job_id, JobSpec(name=name), CheckpointSettings(client.checkpoint_config(job_id).interval))


def running_chronos_jobs(client: FlinkRestClient, records: JobRecordStore) -> list[TunedJob]:
    """Every job not in a terminal state, as chronos knows it; one it does not know (no spec to resubmit it
    from) is refused in one line before anything is touched."""
    jobs = []
    for summary in client.jobs():
        if summary.state in TERMINAL_STATES:
            continue
        record = records.get(summary.jid)
        if record is None:
            raise InvalidInput(f"job {summary.jid} ({summary.name}) runs here but chronos did not submit or adopt it: "
                               "its spec is unknown, so it could not be resubmitted; adopt it (`chronos job adopt`) "
                               "or stop it first")
        jobs.append(TunedJob(summary.jid, record.spec, record.settings))
    return jobs


def running_job_named(client: FlinkRestClient, records: JobRecordStore, name: str) -> JobRecord | None:
    """The one running job chronos submitted here under this name (a resumed profile's live job), if any."""
    running = {j.jid for j in client.jobs() if j.state == "RUNNING"}
    mine = [r for r in records.all() if r.job_id in running and r.spec.name == name]
    return mine[0] if len(mine) == 1 else None


def input_rate_over(records: JobRecordStore, window_s: float, sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> Callable[[str], tuple[float, float] | None]:
    """Events/s into a job chronos knows (its record names the input topic), from the topic's end offsets
    read `window_s` apart: what the job is being sent now, unlike Flink's 60 s source meter. None for a
    job it does not know, or when the broker does not answer (status shows the rest)."""
    def rate(job_id: str) -> tuple[float, float] | None:
        record = records.get(job_id)
        if record is None:
            return None
        try:
            io = job_io(record)
            offsets = TopicEndOffsets(io.bootstrap, *io.input_topics, security=io.kafka)
        except ChronosError:
            return None
        try:
            first, start = offsets.total_end_offset(), clock()
            sleep(window_s)
            last, end = offsets.total_end_offset(), clock()
        except Exception:  # noqa: BLE001 - kafka's timeouts included: a missing reading, status shows the rest
            return None
        finally:
            offsets.close()
        return (last - first) / (end - start), round(end - start, 1)

    return rate
