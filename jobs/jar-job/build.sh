#!/usr/bin/env bash
# Builds chronos-sql-job.jar (a Java Table API job, the "jar" kind of job file) into $1 (default: this
# directory's build/), compiled against the Flink distribution inside the apache-flink wheel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/build}"
python="${CHRONOS_PYTHON_BIN:-$here/../../.venv/bin/python}"
flink_lib="$("$python" -c 'import os, pyflink; print(os.path.join(os.path.dirname(pyflink.__file__), "lib"))')"
mkdir -p "$out/classes"
javac -d "$out/classes" -cp "$flink_lib/*" "$here/src/chronos/jobs/SqlJob.java"
jar --create --file "$out/chronos-sql-job.jar" -C "$out/classes" .
echo "$out/chronos-sql-job.jar"
