"""`starquake run` of a contract group whose only broker is killed while its consumers
read, on local processes: a correct broker is never judged to have lost what the
consumers could not read then. The struck attempt could not run (the drain ends `info`,
so `lost` is undecided), and the group runs again once the broker is back, on a topic of
its own, and reads every message there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

SCENARIO = """\
name = "contract-queue-struck"
duration_s = 30
expected = "valid"

[topology]
clusters = ["a"]
brokers = 1
backend = "local"

[workload]
kind = "contract"
groups = ["queue-failover-batched"]

[nemesis]
schedule = "timeline"

[[nemesis.timeline]]
at_s = 1.0
fault = "kill"
duration_s = 12.0
targets = ["a-broker1"]
"""


def test_a_group_the_owner_s_kill_cut_off_runs_again_and_is_no_loss(tmp_path: Path) -> None:
    scenario = tmp_path / "struck.toml"
    scenario.write_text(SCENARIO)
    done = subprocess.run([sys.executable, "-m", "starquake", "run", str(scenario),
                           "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode in (0, 2), done.stdout[-2000:] + done.stderr[-2000:]
    (run,) = (tmp_path / "runs" / "contract-queue-struck").iterdir()
    results = json.loads((run / "results.json").read_text())
    assert results["checkers"]["lost"]["valid"] is not False, results["checkers"]["lost"]
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    read_again = {e["value"] for e in events if e["f"] == "recv"
                  and e["topic"].endswith("-queue-failover-batched-try2")}
    assert len(read_again) == 50  # every message of the second attempt
