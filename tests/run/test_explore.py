"""`starquake explore` on local processes, as CI runs it: two seeds draw two different
scenarios, each run and judged, and with a mutant on (receipts that name the producer's
newest entry) both runs are invalid with the anomaly that bug makes, found by draws that
were not written for it; the index and JUnit file cover both runs, and each drawn scenario
file runs again as an ordinary scenario."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scenarios.format import load_scenario
from tests.run.suite_runs import REPO, STARQUAKE

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_two_drawn_scenarios_catch_a_mutant_no_draw_names(tmp_path: Path) -> None:
    top = tmp_path / "explore"
    done = subprocess.run([*STARQUAKE, "explore", "--seeds", "2", "--backend", "local",
                           "--mutants", "receipt-names-latest-write", "--runs-dir", str(top)],
                          cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr
    drawn = sorted((top / "scenarios").glob("*.toml"))
    assert [p.name for p in drawn] == ["explore-1.toml", "explore-2.toml"]
    scenarios = [load_scenario(p) for p in drawn]
    assert scenarios[0].workload != scenarios[1].workload
    assert all(s.mutants == ("receipt-names-latest-write",) for s in scenarios)
    for scenario in scenarios:
        (run_dir,) = (top / scenario.name).iterdir()
        results = json.loads((run_dir / "results.json").read_text())
        assert results["valid"] is False, run_dir
        assert results["checkers"]["forked-position"]["count"] > 0, run_dir
    assert (top / "index.html").is_file()
    assert done.stdout.count("INVALID  ") == 2
