"""A profiling copy of a job: the same program and arguments, but its own topics, consumer group,
transactional ids and name, so it can never read, commit for or write to the live job's streams.

A job described by a job file with a `copy:` section gets them through the variables that section names (its
arguments, or its SQL, are rendered again with the copy's values). Otherwise chronos rewrites the flags its
demo jobs take (`--input-topic`, `--output-topic`, `--group-id`, `--transactional-id-prefix`, `--job-name`,
`--bootstrap`). A job with neither is refused, saying what to add: a copy that silently shared the live topics
would corrupt the live job's output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from chronos.errors import InvalidInput
from chronos.model import JobSpec

REQUIRED = ("--input-topic", "--output-topic")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
WHAT_TO_ADD = ("add to its job file `copy: {input-topics: [<var>], output-topics: [<var>], group-id: <var>}` naming "
               "the program.vars that carry them")


@dataclass(frozen=True)
class JobCopy:
    spec: JobSpec
    input_topic: str
    output_topic: str
    live_input_topic: str
    input_topics: tuple[str, ...] = ()  # every input topic of the copy (the first is `input_topic`)
    output_topics: tuple[str, ...] = ()
    live_input_topics: tuple[str, ...] = ()

    @property
    def topics(self) -> tuple[str, ...]:
        """Every topic of the copy's own: created before it starts, deleted after."""
        return tuple(dict.fromkeys((self.input_topic, *self.input_topics, self.output_topic, *self.output_topics)))


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


def _from_templates(spec: JobSpec, run_id: str, bootstrap: str) -> JobCopy:
    live = dict(spec.template_vars)
    name = f"{spec.name}-profile-{run_id}"
    own = {"input-topic": lambda v: f"{v}-profile-{run_id}", "output-topic": lambda v: f"{v}-profile-{run_id}",
           "group-id": lambda v: f"chronos-profile-{run_id}", "transactional-id-prefix": lambda v: f"chronos-profile-{run_id}",
           "job-name": lambda v: name}
    values = dict(live)
    if "bootstrap" in values:
        values["bootstrap"] = bootstrap
    for part, var in spec.copy_vars:
        values[var] = own[part](live[var])

    def render(template: str) -> str:
        return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), template)

    args = tuple(render(t) for t in spec.arg_templates)
    inputs = tuple(values[v] for part, v in spec.copy_vars if part == "input-topic")
    outputs = tuple(values[v] for part, v in spec.copy_vars if part == "output-topic")
    live_inputs = tuple(live[v] for part, v in spec.copy_vars if part == "input-topic")
    return JobCopy(replace(spec, name=name, args=args, template_vars=tuple(sorted(values.items()))), inputs[0],
                   outputs[0], live_inputs[0], inputs, outputs, live_inputs)


def profiling_copy(spec: JobSpec, run_id: str, bootstrap: str) -> JobCopy:
    if spec.copy_vars:
        return _from_templates(spec, run_id, bootstrap)
    missing = [flag for flag in REQUIRED if _flag(spec.args, flag) is None]
    if missing:
        raise InvalidInput(f"job {spec.name} does not say how to give a profiling copy its own topics (no copy: section "
                           f"in its job file, and it does not take {' and '.join(missing)}): {WHAT_TO_ADD}")
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
    return JobCopy(replace(spec, name=name, args=args), copy["--input-topic"], copy["--output-topic"], live_input,
                   (copy["--input-topic"],), (copy["--output-topic"],), (live_input,))


def live_inputs(spec: JobSpec) -> tuple[str, ...]:
    """The live job's input topics, as its copies stand in for them."""
    return profiling_copy(spec, "check", "127.0.0.1:9092").live_input_topics
