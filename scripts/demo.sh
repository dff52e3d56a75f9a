#!/usr/bin/env bash
# Sets everything up and runs the demo on the local stack: real Kafka + Flink on 127.0.0.1, the
# vehicle-stats job at a 10 s checkpoint interval, 2,000 events/s of load and the latency observer;
# then shows the job's status. Leaves the stack running (stop it with `.venv/bin/chronos stack down`, or `chronos stack down` after
# `source .venv/bin/activate`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

chronos stack up
chronos job submit demo --interval 10s
chronos observe run --background
chronos load run --rate 2000 --vehicles 2000 --background
chronos prometheus up --port 0 || echo "(Prometheus not started; the demo goes on without it)"
echo "letting the job run for 40 s under load ..."
sleep 40
chronos status
# Targets this job meets as it runs now (`chronos status` derives them from its measured p99 and interval): the
# demo's windows and the checkpoint its exactly-once output waits for keep its p99 near 12 s at 10 s.
tune_cmd="$(chronos status --json | .venv/bin/python -c 'import json, sys
print(next((r["suggested_tune"] for r in json.load(sys.stdin) if r.get("suggested_tune")), ""))')" || tune_cmd=""
tune_cmd="${tune_cmd:-chronos tune --latency-p99 20s --recovery 60s}"
cat <<TXT

Next (first put chronos on your PATH in this shell: \`source .venv/bin/activate\`):
  chronos status                                  # again, or with --json
  chronos job list
  chronos job retune <JOB_ID> --interval 5s       # stop-with-savepoint, restart with 5 s
  chronos profile run ...                         # then: $tune_cmd (docs/tuning.md)
  chronos report --prometheus <URL above> --out report/   # the dashboards' views as PNGs
  Grafana: add the Prometheus above as a data source, import helm/chronos/dashboards/*.json
  chronos stack down                              # stop everything (Prometheus too)
TXT
