"""`starquake serve` notices a node that died, rather than serving on with a dead broker."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conform.helpers import REPO

pytestmark = [pytest.mark.cluster]


def test_serve_exits_naming_a_broker_that_died(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-m", "starquake", "serve", "--brokers", "1",
                                "--dir", str(tmp_path / "cluster")], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        pid = None
        deadline = time.monotonic() + 90
        for line in process.stdout:
            if found := re.search(r"broker 0: .*\(pid (\d+)\)", line):
                pid = int(found.group(1))
                break
            assert time.monotonic() < deadline
        assert pid is not None, f"serve did not come up (exit {process.poll()})"
        os.kill(pid, signal.SIGKILL)
        output = process.communicate(timeout=60)[0]
        assert process.returncode == 4
        assert re.search(r"node standalone-broker1 died \(exit code -9\)", output), output
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait(60)
