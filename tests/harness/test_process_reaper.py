"""A harness killed outright leaves no local node running: the process reaper ends what the
harness had started and not stopped, and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.targets.local.process_reaper import start_time

REPO = Path(__file__).resolve().parents[2]

# A stand-in harness: starts two long-lived nodes, stops one itself, prints both pids, and
# waits to be killed.
_HARNESS = """
import sys, time
from pathlib import Path
from harness.targets.local.processes import LocalProcess
log = Path(sys.argv[1])
nodes = [LocalProcess(f"node-{n}", [sys.executable, "-c", "import time; time.sleep(120)"],
                      log / f"node-{n}.log") for n in range(2)]
for node in nodes:
    node.start()
nodes[1].stop()
print(nodes[0].pid, flush=True)
time.sleep(120)
"""


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if start_time(pid) is None:
            return True
        time.sleep(0.1)
    return False


def test_a_killed_harness_leaves_no_node_running(tmp_path: Path) -> None:
    harness = subprocess.Popen([sys.executable, "-c", _HARNESS, str(tmp_path)], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert harness.stdout is not None
        node = int(harness.stdout.readline())
        assert start_time(node) is not None
    finally:
        harness.kill()
        harness.wait()
    assert _gone(node, 10), f"node {node} outlived its harness"


def test_start_time_names_one_process_and_none_once_it_is_gone() -> None:
    assert start_time(os.getpid()) == start_time(os.getpid()) is not None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    assert start_time(child.pid) is not None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert start_time(child.pid) is None
