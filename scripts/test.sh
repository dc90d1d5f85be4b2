#!/usr/bin/env bash
# The README's test command and CI's: set up, then run pytest with any arguments given
# (e.g. -m "not slow" for the fast subset). A run that collects no test is a failure.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/setup.sh" || exit 1
cd "$repo"
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" = 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure, not a pass" >&2
    exit 1
fi
exit "$rc"
