#!/usr/bin/env bash
# Installs everything (scripts/setup.sh) and runs the test suite against a real local stack that the
# tests start and stop themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
