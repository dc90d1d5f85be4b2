"""Running `starquake conform` and reading what it wrote, as a user or CI would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def conform(target: Path, runs_dir: Path, *args: str,
            timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the command; its exit, output and `conformance.json` (empty when none)."""
    done = subprocess.run([sys.executable, "-m", "starquake", "conform", "--target",
                           str(target), "--runs-dir", str(runs_dir), "--seed", "7", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    found = sorted(runs_dir.glob("conform/*/*/conformance.json"))
    document = json.loads(found[-1].read_text()) if found else {}
    return done, document


def statuses(document: dict[str, Any]) -> dict[str, str]:
    return {row["feature"]: row["status"] for row in document["features"]}


def explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


def serve(tmp: Path, *args: str) -> Iterator[Path]:
    """`starquake serve` in the background until its target file appears; Ctrl-C after."""
    target = tmp / "target.toml"
    process = subprocess.Popen([sys.executable, "-m", "starquake", "serve", "--dir",
                                str(tmp / "cluster"), "--target-file", str(target), *args],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        deadline = time.monotonic() + 90
        while not target.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert target.exists(), f"serve did not come up (exit {process.poll()})"
        yield target
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
