"""`starquake run` refuses a scenario it cannot run before anything starts: exit 3, one
line naming the file and the key, no run directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_workload_on_a_topology_it_cannot_use_is_bad_input(tmp_path: Path) -> None:
    scenario = tmp_path / "two.toml"
    scenario.write_text('[topology]\nclusters = ["a", "b"]\n[workload]\nkind = "scalable"\n')
    done = subprocess.run([sys.executable, "-m", "starquake", "run", str(scenario),
                           "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3
    assert done.stderr.strip() == (
        f"starquake: {scenario}:2: topology.clusters: the scalable workload runs on one "
        "cluster, got ['a', 'b']")
    assert not (tmp_path / "runs").exists()
