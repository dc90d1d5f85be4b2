"""`starquake run` against the real Apache Pulsar, as a user runs it: the distribution is
fetched when the cache lacks it, a cluster boots in containers, the topic's owner is killed
under load, and the run ends with a verdict whose acknowledgements were judged, the
brokers' logs in the run directory and nothing of the run left on the engine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.targets.docker.engine import connect
from harness.targets.docker.resources import run_containers, run_networks

SCENARIO = Path(__file__).parent / "scenarios" / "pulsar-kill.toml"

pytestmark = [pytest.mark.docker, pytest.mark.spark, pytest.mark.slow]


def test_a_run_of_apache_pulsar_ends_valid_with_its_acks_judged(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "starquake", "run", str(SCENARIO), "--seed", "1",
         "--runs-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    run_id = re.search(r"labelled starquake=(\S+)", output)
    assert run_id is not None, output
    (run_dir,) = (tmp_path / "pulsar-kill").iterdir()

    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    assert results["checkers"]["duplicate"]["acks_judged"] > 0, results["checkers"]
    history = (run_dir / "history.jsonl").read_text()
    assert '"f":"kill"' in history and '"f":"start"' in history

    logs = run_dir / "logs"
    for broker in ("a-broker1", "a-broker2"):
        assert "messaging service is ready" in (logs / f"{broker}.log").read_text()
    client = connect()
    assert not run_containers(client, run_id.group(1))
    assert not run_networks(client, run_id.group(1))
