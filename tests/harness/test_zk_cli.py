"""`starquake zk up`: an ensemble in the foreground that a signal stops cleanly."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from impl.metadata.store import MetadataStore

pytestmark = pytest.mark.zk


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_zk_up_serves_until_signalled_then_stops_its_java_processes(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "starquake", "zk", "up", "--nodes", "1", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("node "):
                break
        text = "".join(lines)
        connect = re.search(r"^connect string: (\S+)$", text, re.M)
        assert connect, f"no connect string in: {text!r}"
        pids = [int(pid) for pid in re.findall(r"^node \d+: pid (\d+)", text, re.M)]
        assert len(pids) == 1
        with MetadataStore.connect(connect.group(1)) as store:
            store.create("/hello", b"world")
            assert store.get("/hello").data == b"world"

        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:  # the test failed early: still stop ZooKeeper cleanly
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert process.returncode == 0, err
    assert "stopped" in out
    assert (tmp_path / "zk1" / "zookeeper.log").exists()
    for pid in pids:
        cmdline = Path(f"/proc/{pid}/cmdline")
        assert not cmdline.exists() or b"QuorumPeerMain" not in cmdline.read_bytes()
