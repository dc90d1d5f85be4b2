#!/usr/bin/env bash
# The README's main job: set up, then run the default scenario against the reference
# implementation: three containerised brokers under partitions, pauses, kills and a
# ZooKeeper session expiry, a keyed topic workload, the checkers, and the HTML report.
# Extra arguments go to `starquake run` (e.g. --seed 7 to repeat a run, --backend local).
# Exits with the run's verdict code (0 valid, 1 invalid, 2 unknown, 3 bad input, 4 environment).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/setup.sh" || exit 4
cd "$repo"
.venv/bin/starquake run scenarios/smoke/topic-faults.toml "$@"
rc=$?
[ "$rc" = 0 ] && echo "main: valid; open runs/latest/report.html"
exit "$rc"
