"""`starquake bench check` end to end, at a small size: it generates a mix, checks it with
Spark and with DuckDB, and both find exactly the anomalies it injected. Every check the
DuckDB yardstick queries must agree with the checkers' results, including those the
bench's histories ask nobody to judge."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_check_verifies_its_counts_on_a_small_mix(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "starquake", "bench", "check", "--events", "100000",
         "--mix", "default", "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "counts verified" in done.stdout
    assert "spark/duckdb" in done.stdout
