"""`starquake bench cluster` on the reference implementation's containers: it times the
start and the teardown, reads the containers' memory once they serve, and leaves nothing
behind. (`--target apache-pulsar` runs the same code on Pulsar's deployment, minutes per
start: measured in docs/performance.md, not here.)"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def test_bench_cluster_reports_times_and_memory_and_leaves_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "starquake", "bench", "cluster",
         "--brokers", "1", "--repeat", "1"],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    memory = re.search(r"memory once serving median ([0-9.]+) MiB", done.stdout)
    assert memory is not None and float(memory.group(1)) > 1.0, done.stdout
    assert "nothing left behind" in done.stdout
    assert "ratio to the 20 s target" in done.stdout
