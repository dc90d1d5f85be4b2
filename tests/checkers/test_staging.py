"""The prepared files on a cluster's shared directory: copied in for the check and removed
after it, or read in place when the run already lives there."""

from __future__ import annotations

from pathlib import Path

from checkers.load import PreparedHistory, prepare
from checkers.staging import staged
from checkers.synthetic import SyntheticSpec, write_jsonl


def _prepared_run(directory: Path) -> PreparedHistory:
    directory.mkdir(parents=True)
    write_jsonl(SyntheticSpec(messages=200), directory / "history.jsonl")
    return prepare(directory / "history.jsonl")


def test_runs_outside_the_shared_directory_are_copied_in_for_the_check(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    history = _prepared_run(tmp_path / "run")
    with staged({"run": history}, shared) as readable:
        copy = readable["run"]
        assert shared in copy.paired.parents
        assert sorted(p.name for p in copy.paired.iterdir()) == sorted(
            p.name for p in history.paired.iterdir())
        assert copy.source == history.source  # results still go beside the history
    assert list(shared.iterdir()) == []


def test_runs_inside_the_shared_directory_are_read_in_place(tmp_path: Path) -> None:
    history = _prepared_run(tmp_path / "shared" / "run")
    with staged({"run": history}, tmp_path / "shared") as readable:
        assert readable == {"run": history}
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == ["run"]
