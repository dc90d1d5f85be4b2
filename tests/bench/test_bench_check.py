"""`starquake bench check` end to end, at a small size: it generates a mix, checks it with
Spark and with DuckDB, and both find exactly the anomalies it injected. Every check the
DuckDB yardstick queries must agree with the checkers' results, including those the
bench's histories ask nobody to judge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from history.errors import BAD_INPUT


@pytest.mark.slow
@pytest.mark.parametrize("options", [["--mix", "default"],
                                     ["--mix", "untuned", "--anomalies", "40"]])
def test_bench_check_verifies_its_counts_on_a_small_mix(tmp_path: Path,
                                                        options: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "starquake", "bench", "check", "--events", "100000",
         *options, "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "counts verified" in done.stdout
    assert "spark/duckdb" in done.stdout


def test_bench_check_refuses_more_anomalies_than_the_history_holds() -> None:
    """The generator's refusal, before any check, names the options to change."""
    done = subprocess.run(
        [sys.executable, "-m", "starquake", "bench", "check", "--events", "20000",
         "--anomalies", "2000"],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == BAD_INPUT, done.stdout + done.stderr
    assert "Invalid value for --events or --anomalies: too few events to inject 2000" in (
        done.stderr)


def _processes_naming(text: str) -> list[int]:
    """The pids whose command line names `text`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue  # it ended while we looked
    return found


@pytest.mark.slow
def test_bench_check_end_to_end_times_each_way_a_user_checks(tmp_path: Path) -> None:
    """Cold, first and warm checks of the small and the large history, each verified, and
    DuckDB's four questions beside the large one; the bench's own resident server is gone
    afterwards."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "starquake", "bench", "check", "--events", "20000",
         "--mix", "default", "--end-to-end", "--repeats", "1",
         "--spark-driver-memory", "1g"],
        capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stdout + done.stderr
    small, large = done.stdout.split("large (")
    for section in (small, large):
        for way in ("cold, a Spark of its own: median", "first, starting the resident server:",
                    "warm, through the resident server: median", "cold / warm = "):
            assert way in section, done.stdout
    assert "duckdb, the four questions: median" in large
    assert "duckdb, one plain query: median" in large
    assert "warm / duckdb = " in large and "warm / plain duckdb = " in large
    assert _processes_naming(str(scratch)) == []
