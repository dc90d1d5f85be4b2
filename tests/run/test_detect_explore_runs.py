"""`starquake detect --explore-only` on local processes: the explore column over one seed,
for real. The scenario seed 1 draws among the mutant scenario's workload (topic) runs once
with a mutant on (receipts that name the producer's newest entry) and once with none; the
first is caught, the second is the topic workload's valid control, both land in the
ledger keyed by their mutants, and the detection file gets the column and the control's
section."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scenarios.format import load_scenario
from tests.run.suite_runs import REPO, STARQUAKE

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

MUTANT = "receipt-names-latest-write"


def test_the_explore_column_catches_a_mutant_beside_a_valid_control(tmp_path: Path) -> None:
    top, table = tmp_path / "detect", tmp_path / "detection.md"
    done = subprocess.run(
        [*STARQUAKE, "detect", f"scenarios/mutants/topic-{MUTANT}.toml", "--explore-only",
         "--seeds", "1", "--backend", "local", "--runs-dir", str(top), "--out", str(table)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    # Seed 1 draws a topic run whose sends overlap by the hundred: the mutant forks
    # positions in every such run (tests/run/test_explore.py).
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    lines = (top / "detect-ledger.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in lines[1:]]  # the first names the source
    assert {(r["scenario"], tuple(r["mutants"]), r["passed"]) for r in ledger} == {
        ("local/explore-topic-1", (MUTANT,), True), ("local/explore-topic-1", (), True)}
    caught = next(r for r in ledger if r["mutants"])
    assert "forked-position" in caught["reported"]
    runs = {tuple(r["mutants"]): Path(r["run"]) for r in ledger}
    verdicts = {m: json.loads((run / "results.json").read_text())["valid"]
                for m, run in runs.items()}
    assert verdicts == {(MUTANT,): False, (): True}
    # One drawn scenario, run twice: only the mutants differ.
    drawn = {m: load_scenario(run / "scenario.toml") for m, run in runs.items()}
    assert drawn[(MUTANT,)].mutants == (MUTANT,) and drawn[()].mutants == ()
    assert drawn[(MUTANT,)].workload == drawn[()].workload
    assert drawn[(MUTANT,)].nemesis == drawn[()].nemesis
    text = table.read_text()
    assert f"| `topic-{MUTANT}` | `{MUTANT}` | local | 1 of 1 | 1 |" in text
    assert "Valid in 1 of 1 runs (topic on local 1 of 1); `invalid` in 0." in " ".join(
        text.splitlines())
    assert "No false alarm." in text
