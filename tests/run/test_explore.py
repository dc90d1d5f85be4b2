"""`starquake explore` on local processes, as CI runs it: two seeds draw two different
scenarios, written as scenario files that read back, each run and judged, the two at once
(`--parallel 2`, each line of a run named by its scenario); with a mutant on
(receipts that name the producer's newest entry) the explore is invalid, its caught runs
showing the anomaly that bug makes, found by draws not written for it; the index covers
the runs."""

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
                           "--mutants", "receipt-names-latest-write", "--parallel", "2",
                           "--runs-dir", str(top)],
                          cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr
    drawn = sorted((top / "scenarios").glob("*.toml"))
    assert [p.name for p in drawn] == ["explore-1.toml", "explore-2.toml"]
    scenarios = [load_scenario(p) for p in drawn]
    assert scenarios[0].workload != scenarios[1].workload
    assert all(s.mutants == ("receipt-names-latest-write",) for s in scenarios)
    caught = []
    for scenario in scenarios:
        (run_dir,) = (top / scenario.name).iterdir()
        results = json.loads((run_dir / "results.json").read_text())
        if results["valid"] is False:
            caught.append(results["checkers"]["forked-position"]["count"])
    # Seed 1's topic run puts hundreds of values at shared positions; seed 2's catch
    # depends on how often its sends overlap, which timing decides.
    assert caught and all(count > 0 for count in caught), caught
    assert (top / "index.html").is_file()
    lines = done.stdout.splitlines()
    for scenario in scenarios:  # both ran, each printing through its lane's prefix
        assert any(line.startswith(f"[{scenario.name}] verdict: ") for line in lines)
    assert sum(line.startswith("  INVALID  ") for line in done.stdout.splitlines()) == len(caught)
