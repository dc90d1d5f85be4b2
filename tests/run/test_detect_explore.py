"""The explore column of `starquake detect`, with the runs faked (no cluster): each mutant
set is explored among its scenario's workload, the sets of a workload and that workload's
control run the same drawn scenarios, a catch is an `invalid` run, the table gives each
row's catches and first catching seed with a summary below, the control lists its false
alarms with their workload and what they reported, a resumed detect runs nothing the
ledger holds, and `--explore-only` rewrites its own sections and no other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from history.errors import INVALID, VALID, BadInput
from history.writer import HistoryWriter
from scenarios.draw import draw_scenario
from scenarios.format import load_scenario
from starquake.output import command_console
from starquake.run.detect import Detection, detect, table
from starquake.run.detect_explore import (
    NEVER,
    SHARED,
    Exploration,
    columns,
    control_table,
    explorations,
    explore_table,
)
from starquake.run.detect_ledger import Judged, Ledger
from starquake.run.pipeline import RunOptions
from starquake.run.suite import SuiteResult

REPO = Path(__file__).resolve().parents[2]
FENCING = REPO / "scenarios/mutants/topic-no-fencing.toml"
RECEIPTS = REPO / "scenarios/mutants/topic-receipt-names-latest-write.toml"
SOURCE = "commit aaaaaaaaaaaa"

Outcome = dict[tuple[str, tuple[str, ...]], tuple[int, dict[str, object]]]
"""(drawn scenario, mutants) -> the faked run's exit code and its checkers' verdicts; a run
not named ends valid."""


class FakeSuite:
    """`run_suite` as detect_explore calls it: each file's result from `outcome`, with a
    run directory holding the checkers' verdicts that `reported` reads; every file it is
    asked to run is kept in `ran`."""

    def __init__(self, top: Path, outcome: Outcome) -> None:
        self.top, self.outcome, self.ran = top, outcome, []

    def __call__(self, files: list[Path], options: RunOptions, _console: object,
                 **_: object) -> Iterator[SuiteResult]:
        for file in files:
            self.ran.append(file)
            scenario = load_scenario(file)
            assert scenario.seed is not None
            code, checkers = self.outcome.get((scenario.name, scenario.mutants), (VALID, {}))
            run = self.top / f"run-{len(self.ran)}"
            run.mkdir(parents=True)
            with HistoryWriter(run / "history.jsonl") as writer:
                writer.record("harness", "ok", "meta", detail={"scenario": scenario.name,
                                                               "seed": scenario.seed})
            (run / "results.json").write_text(json.dumps(
                {"valid": {VALID: True, INVALID: False}.get(code, "unknown"),
                 "checkers": checkers}))
            yield SuiteResult(file, scenario.expected, code, run)


CAUGHT = (INVALID, {"forked-position": {"valid": False}})
RECEIPT_SET = ("topic", ("receipt-names-latest-write",), "local")
FENCING_SET = ("topic", ("no-fencing",), "local")
SNAPSHOT_SET = ("geo", ("partial-snapshot",), "local")
OUTCOME: Outcome = {
    ("explore-topic-2", ("receipt-names-latest-write",)): CAUGHT,
    ("explore-topic-3", ("receipt-names-latest-write",)): CAUGHT,
    ("explore-topic-1", ("no-fencing",)): (2, {"lost": {"valid": "unknown"}}),  # not a catch
    ("explore-geo-1", ("partial-snapshot",)): (INVALID, {"lost": {"valid": False}}),
    ("explore-topic-1", ()): (INVALID, {"duplicate": {"valid": False}, "lost": {"valid": True}}),
    ("explore-geo-3", ()): (2, {"order": {"valid": "unknown"}}),
}


def _explore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcome: Outcome,
             ledger: Ledger) -> tuple[Exploration, FakeSuite]:
    fake = FakeSuite(tmp_path / "fake-runs", outcome)
    monkeypatch.setattr("starquake.run.detect_explore.run_suite", fake)
    found = explorations([FENCING_SET, RECEIPT_SET, SNAPSHOT_SET, FENCING_SET],
                         3, tmp_path / "runs", RunOptions(FENCING).spark,
                         command_console(), ledger)
    return found, fake


def test_each_set_and_its_workloads_control_run_each_seeds_drawn_scenario_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, fake = _explore(tmp_path, monkeypatch, OUTCOME,
                           Ledger(tmp_path / "ledger.jsonl", SOURCE, resume=False))
    ran = [load_scenario(file) for file in fake.ran]
    assert [(s.seed, s.workload.kind, s.mutants, s.topology.backend) for s in ran] == [
        (seed, *key) for seed in (1, 2, 3)
        for key in [FENCING_SET, RECEIPT_SET, SNAPSHOT_SET, ("topic", (), "local"),
                    ("geo", (), "local")]]
    for scenario in ran:  # what `starquake explore --workloads K --seed S` draws
        kind = scenario.workload.kind
        assert scenario.name == f"explore-{kind}-{scenario.seed}"
        assert scenario.workload == draw_scenario(scenario.seed or 0, "local",
                                                  kinds=(kind,)).workload
    assert [run.passed for run in found.sets[RECEIPT_SET].runs] == [False, True, True]
    assert found.sets[RECEIPT_SET].runs[1].reported == ("forked-position",)
    assert [run.passed for run in found.sets[FENCING_SET].runs] == [False] * 3
    assert [run.passed for run in found.sets[SNAPSHOT_SET].runs] == [True, False, False]
    assert [[run.passed for run in runs] for runs in found.control.values()] == [
        [False, True, True], [True, True, False]]
    assert (found.finished, found.perfect) == (True, False)


def test_the_table_gives_each_rows_catches_first_catch_and_a_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caught at seeds 2 and 3 of 3: "2 of 3", first catch 2; never caught: a dash. The
    tailored table gains the two cells per row; the explore-only table has them alone."""
    found, _ = _explore(tmp_path, monkeypatch, OUTCOME,
                        Ledger(tmp_path / "ledger.jsonl", SOURCE, resume=False))
    summary = ("Explore caught 2 of 3 mutant sets (each with its workload and backend) within "
               "3 seeds, "
               "2 within 3 seeds or fewer; median seeds to the first catch, over those "
               "caught: 1.5.")
    rows = [Detection("topic-receipt-names-latest-write", "topic", "local",
                      ("receipt-names-latest-write",), ("forked-position",), [True] * 3,
                      [9.0], [True]),
            Detection("topic-no-fencing", "topic", "local", ("no-fencing",), ("lost",), [True],
                      [4.0], [True])]
    tailored = table(rows, "starquake detect ... --explore", SOURCE,
                     columns(found, 3)).splitlines()
    assert ("| scenario | mutants | anomalies | caught | first anomaly (s) | twin valid | "
            "explored on | caught by explore | first catch at seed |") in tailored
    assert ("| `topic-receipt-names-latest-write` | `receipt-names-latest-write` | "
            "forked-position | 3/3 | 9.0 | 1/1 | local | 2 of 3 | 2 |") in tailored
    assert (f"| `topic-no-fencing` | `no-fencing` | lost | 1/1 | 4.0 | 1/1 | local | 0 of 3 | "
            f"{NEVER} |") in tailored
    assert tailored[-1] == summary
    alone = explore_table([load_scenario(RECEIPTS), load_scenario(FENCING)], found, 3,
                          "starquake detect ... --explore-only", SOURCE).splitlines()
    assert ("| `topic-receipt-names-latest-write` | `receipt-names-latest-write` | local | "
            "2 of 3 | 2 |") in alone
    assert f"| `topic-no-fencing` | `no-fencing` | local | 0 of 3 | {NEVER} |" in alone
    assert alone[-1] == summary


def test_the_control_lists_each_false_alarm_with_what_it_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, _ = _explore(tmp_path, monkeypatch, OUTCOME,
                        Ledger(tmp_path / "ledger.jsonl", SOURCE, resume=False))
    text = control_table(found, "starquake detect ... --explore", SOURCE)
    lines = text.splitlines()
    assert "| 1 | topic | local | duplicate |" in lines
    assert "| 3 | geo | local | order unknown |" in lines
    assert not any(line.startswith("| 2 |") for line in lines)
    assert ("Valid in 4 of 6 runs (topic on local 2 of 3, geo on local 2 of 3); `invalid` in "
            "1.") in " ".join(lines)
    quiet, _ = _explore(tmp_path / "quiet", monkeypatch, {},
                        Ledger(tmp_path / "quiet.jsonl", SOURCE, resume=False))
    quiet_text = " ".join(control_table(quiet, "starquake detect ... --explore",
                                        SOURCE).splitlines())
    assert ("Valid in 6 of 6 runs (topic on local 3 of 3, geo on local 3 of 3); `invalid` in "
            "0.") in quiet_text
    assert "No false alarm." in quiet_text


def test_a_catch_by_what_the_same_draw_failed_without_the_mutant_is_not_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1's control failed `duplicate`: a mutant run of that draw failing `duplicate`
    alone says nothing of the mutant, one that adds another checker does; the cell shows
    the catch it did not count."""
    outcome: Outcome = {
        **OUTCOME,
        ("explore-topic-1", ("receipt-names-latest-write",)):
            (INVALID, {"duplicate": {"valid": False}}),
        ("explore-topic-1", ("no-fencing",)):
            (INVALID, {"duplicate": {"valid": False}, "lost": {"valid": False}})}
    found, _ = _explore(tmp_path, monkeypatch, outcome,
                        Ledger(tmp_path / "ledger.jsonl", SOURCE, resume=False))
    receipts, fencing = found.sets[RECEIPT_SET], found.sets[FENCING_SET]
    assert [run.passed for run in receipts.runs] == [True, True, True]
    assert receipts.cells() == ("local", f"2 of 3 (+1 {SHARED})", "2")
    assert fencing.cells() == ("local", "1 of 3", "1")
    assert found.sets[SNAPSHOT_SET].cells() == ("local", "1 of 3", "1")  # geo's control: valid


def test_a_resumed_explore_counts_the_ledger_and_runs_nothing_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The explore runs are keyed by the drawn scenario, seed and mutants: the tailored
    run of the same mutants and seed is another record, and neither hides the other."""
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, SOURCE, resume=False)
    tailored = Judged("topic-no-fencing", 1, ("no-fencing",), True, (), 4.0, "t1")
    ledger.add(tailored)
    first, fake = _explore(tmp_path, monkeypatch, OUTCOME, ledger)
    assert len(fake.ran) == 15
    again = Ledger(path, SOURCE, resume=True)
    assert again.get("topic-no-fencing", 1, ("no-fencing",)) == tailored
    assert again.get("local/explore-topic-2", 2, ("receipt-names-latest-write",)) == \
        first.sets[RECEIPT_SET].runs[1]
    assert again.get("local/explore-geo-1", 1, ()) == first.control[("geo", "local")][0]
    resumed, refake = _explore(tmp_path / "resumed", monkeypatch, {}, again)
    assert refake.ran == []
    assert resumed == first


def test_a_read_only_ledger_of_other_code_gives_the_same_column_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--tables-only`: the runs of one commit counted by later code, nothing run again;
    a run the ledger lacks is bad input, not a run to make."""
    path = tmp_path / "ledger.jsonl"
    first, _ = _explore(tmp_path, monkeypatch, OUTCOME, Ledger(path, SOURCE, resume=False))
    read = Ledger(path, None, resume=False)
    assert read.source == SOURCE
    again, fake = _explore(tmp_path / "again", monkeypatch, {}, read)
    assert (fake.ran, again) == ([], first)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # the last run judged, gone
    with pytest.raises(BadInput, match="--tables-only runs nothing"):
        _explore(tmp_path / "short", monkeypatch, {}, Ledger(path, None, resume=False))


def test_explore_only_rewrites_its_own_sections_and_leaves_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "detection.md"
    kept = ("Intro kept.\n\n<!-- detect:mutants -->\nM1\n<!-- /detect:mutants -->\n\n"
            "<!-- detect:clean -->\nC1\n<!-- /detect:clean -->\n")
    out.write_text(kept + "\n<!-- detect:explore -->\nE0\n<!-- /detect:explore -->\n")

    def no_tailored_run(*_: object) -> Iterator[SuiteResult]:
        raise AssertionError("--explore-only ran a tailored scenario")

    monkeypatch.setattr("starquake.run.detect.run_suite", no_tailored_run)
    fake = FakeSuite(tmp_path / "fake-runs", OUTCOME)
    monkeypatch.setattr("starquake.run.detect_explore.run_suite", fake)
    done = CliRunner().invoke(detect, [
        str(RECEIPTS), "--explore-only", "--seeds", "3", "--backend", "local",
        "--runs-dir", str(tmp_path / "runs"), "--out", str(out)], standalone_mode=False)
    assert done.exception is None, done.output
    assert done.return_value == INVALID  # the control had false alarms
    assert len(fake.ran) == 6  # the row's set and the topic control, three seeds each
    document = out.read_text()
    assert document.startswith(kept)
    explore = document.split("<!-- detect:explore -->\n", 1)[1].split(
        "<!-- /detect:explore -->", 1)[0]
    assert "E0" not in explore
    assert ("Generated by `starquake detect " + str(RECEIPTS)
            + " --seeds 3 --backend local --explore-only`") in explore
    assert ("| `topic-receipt-names-latest-write` | `receipt-names-latest-write` | local | "
            "2 of 3 | 2 |") in explore.splitlines()
    control = document.split("<!-- detect:explore-clean -->\n", 1)[1]
    assert "Valid in 2 of 3 runs (topic on local 2 of 3); `invalid` in 1." in " ".join(
        control.splitlines())
    assert control.endswith("<!-- /detect:explore-clean -->\n")
