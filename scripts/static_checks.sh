#!/usr/bin/env bash
# The static checks .ci/run runs: ruff over the whole repository, mypy over the package and the PyFlink programs,
# and the import-linter contracts for the layers (docs/architecture.md).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "--- ruff"
.venv/bin/ruff check .  # the whole repository: every source root of the namespace, tests, bench, scripts
echo "--- mypy"
.venv/bin/mypy
.venv/bin/mypy jobs/flink-programs  # the PyFlink programs: files Flink runs, outside the import path
echo "--- import-linter"
.venv/bin/lint-imports
