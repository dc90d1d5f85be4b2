"""`starquake run` on the docker backend: partitions by iptables and a session expiry
through the broker's debug endpoint are recorded with their targets, the run is valid,
and nothing of it is left on the engine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__).resolve().parent / "scenarios/docker-partitions.toml"

pytestmark = [pytest.mark.docker, pytest.mark.spark, pytest.mark.slow]


def test_partition_and_session_expiry_in_containers(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "starquake", "run", str(SCENARIO),
                           "--seed", "11", "--runs-dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=500, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = re.search(r"containers labelled starquake=(\S+)", done.stdout)
    assert run_id is not None, done.stdout
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=starquake={run_id[1]}"],
                          capture_output=True, text=True, check=True).stdout
    assert left.strip() == ""

    (run_dir,) = (tmp_path / "docker-partitions").iterdir()
    events = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]
    nemesis = {(e["f"], e["type"]): e for e in events if e["process"] == "nemesis"}
    partition = json.loads(nemesis[("partition", "ok")]["detail"])
    (isolated,) = partition["targets"]
    assert isolated.startswith("a-broker")
    assert partition["grudge"][isolated] == sorted(
        ["a-zk1", "a-bookie1", *{"a-broker1", "a-broker2", "a-broker3"} - {isolated}])
    expired = json.loads(nemesis[("expire-session", "ok")]["detail"])
    assert list(expired["sessions"]) == expired["targets"]
    assert ("heal", "ok") in nemesis
    assert {p.name for p in (run_dir / "logs").iterdir()} >= {"a-broker1.log", "a-zk1.log"}
