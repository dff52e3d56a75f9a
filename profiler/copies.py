"""A profiling copy of a job: the same program and arguments, but its own topics, consumer group,
transactional ids and name, so it can never read, commit for or write to the live job's streams.

chronos rewrites the flags its demo job takes (`--input-topic`, `--output-topic`, `--group-id`,
`--transactional-id-prefix`, `--job-name`, `--bootstrap`); a job to be profiled must take them too.
A spec without the topic flags is refused: a copy that silently shared the live topics would corrupt
the live job's output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chronos.errors import InvalidInput
from chronos.model import JobSpec

REQUIRED = ("--input-topic", "--output-topic")


@dataclass(frozen=True)
class JobCopy:
    spec: JobSpec
    input_topic: str
    output_topic: str
    live_input_topic: str


def _flag(args: tuple[str, ...], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _with_flag(args: tuple[str, ...], name: str, value: str) -> tuple[str, ...]:
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == name and i + 1 < len(args):
            skip = True
            continue
        if arg.startswith(name + "="):
            continue
        out.append(arg)
    return (*out, name, value)


def profiling_copy(spec: JobSpec, run_id: str, bootstrap: str) -> JobCopy:
    missing = [flag for flag in REQUIRED if _flag(spec.args, flag) is None]
    if missing:
        raise InvalidInput(f"job {spec.name} does not take {' and '.join(missing)}: chronos cannot give a copy its own topics")
    live_input = _flag(spec.args, "--input-topic") or ""
    name = f"{spec.name}-profile-{run_id}"
    copy = {
        "--input-topic": f"{live_input}-profile-{run_id}",
        "--output-topic": f"{_flag(spec.args, '--output-topic')}-profile-{run_id}",
        "--group-id": f"chronos-profile-{run_id}",
        "--transactional-id-prefix": f"chronos-profile-{run_id}",
        "--job-name": name,
        "--bootstrap": bootstrap,
    }
    args = spec.args
    for flag, value in copy.items():
        args = _with_flag(args, flag, value)
    return JobCopy(replace(spec, name=name, args=args), copy["--input-topic"], copy["--output-topic"], live_input)
