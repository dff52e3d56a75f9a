"""Runs a Flink SQL file as a streaming job: chronos's way to (re)submit a SQL job over REST.

The sql-client cannot run here (the wheel lacks the sql-gateway jar), and a SQL job must be
resubmittable from a savepoint with a new checkpoint interval like any other; as the PyFlink program
`sql_runner.py --sql FILE [--var name=value ...]` it goes through the same PythonDriver submission.
`${name}` in the file is replaced by the variable's value; statements are separated by `;` at a line
end; every statement but the last INSERT runs as DDL, the INSERTs run together as one job. A variable whose value is
a secret's reference (`${env:NAME}`, `${file:/path}`) gets the secret, read here, where the program runs: chronos
keeps only the reference in its records and in the job's arguments.

Run by Flink, not imported by chronos; it needs only pyflink.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_REFERENCE = re.compile(r"\$\{(env|file):([^{}\s]+)\}")
# The same refusal as chronos's job file makes, again here where the values meet the SQL.
_SQL_UNSAFE = re.compile(r"['\"`;\\\r\n\x00]|--|/\*")


def resolve(value: str) -> str:
    """A secret's reference as the secret (chronos.secret_refs' syntax, read the same way); any other value as is."""
    found = _REFERENCE.fullmatch(value)
    if found is None:
        return value
    kind, name = found.groups()
    if kind == "env":
        if name not in os.environ:
            raise KeyError(f"{value}: the environment variable is not set where the program runs")
        return os.environ[name]
    return Path(name).read_text(encoding="utf-8").rstrip("\r\n")


def render(text: str, variables: dict[str, str]) -> list[str]:
    """The file's statements with variables substituted; an unknown variable is an error, not a blank."""
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise KeyError(f"SQL variable ${{{name}}} has no value (give --var {name}=...)")
        resolved = resolve(variables[name])
        if _SQL_UNSAFE.search(resolved):  # never said: it may be a secret
            raise ValueError(f"SQL variable ${{{name}}} holds a quote, ;, newline, backslash or comment: refused")
        return resolved

    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    rendered = _VARIABLE.sub(value, body)
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", rendered) if s.strip()]


def parse_var(given: str) -> tuple[str, str]:
    """`name=value`, the name an identifier (as chronos's job files give them): a name holding `=` or `)` would put
    the rest of it into the value, unchecked."""
    name, sep, value = given.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
        raise ValueError(f"--var {name[:40]!r}: a variable's name is an identifier (letters, digits, _)")
    return name, value


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sql", required=True, help="SQL file")
    parser.add_argument("--var", action="append", default=[], help="name=value, for ${name} in the file")
    parser.add_argument("--job-name", default="", help="pipeline name (else from the submission config)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    a = parse_args(argv)
    variables = dict(parse_var(v) for v in a.var)
    statements = render(Path(a.sql).read_text(), variables)
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    if a.job_name:
        t_env.get_config().set("pipeline.name", a.job_name)
    inserts = [s for s in statements if s.upper().startswith("INSERT")]
    for statement in statements:
        if statement not in inserts:
            t_env.execute_sql(statement)
    if not inserts:
        raise SystemExit("the SQL file has no INSERT statement: nothing to run")
    if len(inserts) == 1:
        t_env.execute_sql(inserts[0])
    else:
        statement_set = t_env.create_statement_set()
        for insert in inserts:
            statement_set.add_insert_sql(insert)
        statement_set.execute()


if __name__ == "__main__":
    main(sys.argv[1:])
