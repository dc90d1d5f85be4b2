#!/usr/bin/env bash
# The README's main job: set up, then the best end-to-end path the project has today.
# Until `starquake run` drives a real cluster (issue 6), that is: a seeded synthetic run and
# a twin with injected anomalies, both judged by `starquake check` in one Spark job. It
# succeeds when the legal run is valid and the broken one is caught with exact counts.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/setup.sh" || exit 1
cd "$repo"
runs=runs/main-job/$(date +%Y%m%d-%H%M%S)
.venv/bin/starquake synth "$runs/legal" --seed 1 || exit $?
.venv/bin/starquake synth "$runs/broken" --seed 2 --inject lost=3,duplicate=2,order=1 || exit $?
.venv/bin/starquake check "$runs" 2> "$runs/spark.log"
rc=$?
if [ "$rc" != 1 ]; then
    echo "main: expected the broken run to be caught (exit 1), got exit $rc; see $runs/spark.log" >&2
    exit 1
fi
.venv/bin/python - "$runs" <<'PY' || exit 1
import json, sys
summary = json.load(open(f"{sys.argv[1]}/summary.json"))["runs"]
assert summary["legal"]["valid"] is True, summary["legal"]
assert summary["broken"]["anomalies"] == {"lost": 3, "duplicate": 2, "order": 1}, summary
print(f"main: the legal run is valid; the broken run shows exactly what was injected. "
      f"Results: {sys.argv[1]}/*/results.json")
PY
