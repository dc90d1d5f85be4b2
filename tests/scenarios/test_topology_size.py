"""A topology larger than a run can start is refused as the scenario is read, in the
reader's one-line style, and `scenario validate` exits 3 for it, where it used to pass and
the run to fail at start (exit 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.topology import MAX_CLUSTERS, MAX_NODES, MAX_PER_CLUSTER
from scenarios.format import ScenarioError, load_scenario

WHY = "(the most a run starts, docs/scenarios.md)"
KEYS = {f"{role}s": most for role, most in MAX_PER_CLUSTER.items()}


def _scenario(tmp_path: Path, topology: str) -> Path:
    path = tmp_path / "big.toml"
    path.write_text(f'name = "big"\n[topology]\nbackend = "local"\n{topology}\n')
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    return str(refused.value)


@pytest.mark.parametrize("key", sorted(KEYS))
def test_each_role_up_to_its_maximum_is_read(tmp_path: Path, key: str) -> None:
    scenario = load_scenario(_scenario(tmp_path, f"{key} = {KEYS[key]}"))
    assert getattr(scenario.topology, key) == KEYS[key]


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("above", [1, 1_000_000])
def test_more_of_a_role_than_its_maximum_is_refused(tmp_path: Path, key: str,
                                                    above: int) -> None:
    path = _scenario(tmp_path, f"{key} = {KEYS[key] + above}")
    assert _refusal(path) == (f"{path}:4: topology.{key}: expected a number from 1 to "
                                  f"{KEYS[key]} {WHY}, got {KEYS[key] + above}")


def test_more_clusters_than_the_maximum_are_refused(tmp_path: Path) -> None:
    names = [f"c{n}" for n in range(MAX_CLUSTERS + 1)]
    path = _scenario(tmp_path, f"clusters = {names}\nbrokers = 1")
    assert _refusal(path) == (f"{path}:4: topology.clusters: expected at most "
                                  f"{MAX_CLUSTERS} clusters {WHY}, got {names}")


def test_more_nodes_in_all_than_the_maximum_are_refused(tmp_path: Path) -> None:
    path = _scenario(tmp_path, f'clusters = ["a", "b"]\nbrokers = {KEYS["brokers"]}')
    nodes = 2 * (KEYS["brokers"] + 2)
    assert nodes > MAX_NODES
    assert _refusal(path) == (f"{path}:2: topology: expected at most {MAX_NODES} nodes "
                                  f"in all {WHY}, got {nodes} (2 clusters of {nodes // 2})")


def test_validate_exits_3_with_one_line(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "brokers = 1000000")
    refused = subprocess.run([sys.executable, "-m", "starquake", "scenario", "validate",
                              str(path)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 3
    assert refused.stderr.strip() == (f"starquake: {path}:4: topology.brokers: expected a "
                                      f"number from 1 to {KEYS['brokers']} {WHY}, "
                                      f"got 1000000")
    assert refused.stdout == ""
