#!/usr/bin/env bash
# Installs everything (scripts/setup.sh) and runs the test suite against a real local stack that the
# tests start and stop themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Two workers, each with a stack of its own; whole modules are handed out as workers come free (a module's
# tests may share a module-scoped run), the long ones first (tests/conftest.py), one module ahead at most
# (tests/support/module_scheduling.py: `--dist loadfile` is its base). Most of the suite waits on
# Flink (failure detection, checkpoints, steady windows), so two workers fit on two cores.
# The stacks' JVMs compile with C1 only: a test's JVM lives a minute or two, and C2's compilations on two cores
# slow the suite more than the faster code gains. They collect with the serial collector: heaps of a few hundred MB
# on two cores, where G1's concurrent work and barriers cost more CPU than its shorter pauses are worth to a test
# (the demo and paced-checkpoint modules took 8 % less CPU so). The stacks, profiling clusters and `chronos stack
# up` in tests read CHRONOS_JVM_OPTS; set it empty to run them with the JVM's defaults. The two tests that once
# raced with faster JVMs (a profile finishing before its interrupt, a Kafka restart too short to be seen) no
# longer depend on this machine's speed.
export CHRONOS_JVM_OPTS="${CHRONOS_JVM_OPTS--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
exec .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
