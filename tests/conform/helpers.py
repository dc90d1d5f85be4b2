"""Running `starquake conform` and reading what it wrote, as a user or CI would."""

from __future__ import annotations

import json
import subprocess
import sys
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
