"""`starquake run` refuses a scenario it cannot run before anything starts: exit 3, one
line naming the file and the key, no run directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_workload_not_built_yet_is_bad_input(tmp_path: Path) -> None:
    scenario = REPO / "scenarios/smoke/scalable-split-partition.toml"
    done = subprocess.run([sys.executable, "-m", "starquake", "run", str(scenario),
                           "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3
    assert done.stderr.strip() == (
        f"starquake: {scenario}: workload.kind: the scalable workload is not available yet "
        "(issue 5, scalable topics); available: topic")
    assert not (tmp_path / "runs").exists()
