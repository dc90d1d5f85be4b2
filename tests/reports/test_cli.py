"""`starquake report` and `starquake suite-index` on input they cannot use: exit 3 and one
line naming what is wrong and where."""

from __future__ import annotations

from pathlib import Path

import pytest

from history.errors import BAD_INPUT
from starquake.cli import main
from tests.reports.runs import synthetic_run


def run_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    return exited.value.code, capsys.readouterr().err.strip()


def test_missing_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli("report", str(tmp_path / "nope"), capsys=capsys)
    assert code == BAD_INPUT
    assert err == f"starquake: {tmp_path / 'nope'}: not a run directory (no such directory)"


def test_unchecked_run_names_the_missing_results(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = synthetic_run(tmp_path / "run", 200)
    code, err = run_cli("report", str(run), capsys=capsys)
    assert code == BAD_INPUT
    assert err == (f"starquake: {run / 'results.json'}: missing; "
                   f"run `starquake check {run}` first")


def test_corrupt_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = synthetic_run(tmp_path / "run", 200)
    (run / "results.json").write_text('{"valid": tru')
    code, err = run_cli("report", str(run), capsys=capsys)
    assert code == BAD_INPUT
    assert err.startswith(f"starquake: {run / 'results.json'}: not valid JSON")
    assert "\n" not in err


def test_results_without_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text('{"valid": true, "checkers": {}}')
    code, err = run_cli("report", str(run), capsys=capsys)
    assert code == BAD_INPUT
    assert err == f"starquake: {run}: no history.jsonl or history.parquet in this directory"


def test_corrupt_history_names_the_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    run = synthetic_run(tmp_path / "run", 200)
    (run / "results.json").write_text('{"valid": true, "checkers": {}}')
    lines = (run / "history.jsonl").read_text().splitlines()
    lines[5] = lines[5].replace('"process"', '"proc"')
    (run / "history.jsonl").write_text("\n".join(lines) + "\n")
    code, err = run_cli("report", str(run), capsys=capsys)
    assert code == BAD_INPUT
    assert err == f"starquake: {run / 'history.jsonl'}:6: field 'process' is missing"


def test_suite_index_without_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli("suite-index", str(tmp_path), capsys=capsys)
    assert code == BAD_INPUT
    assert err == f"starquake: {tmp_path}: no run directory with results.json in it or below it"
