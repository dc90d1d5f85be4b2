"""`starquake shrink` refuses, before any run, what it cannot shrink: a run that is not
invalid, and an anomaly the run does not have (exit 3, one line naming the run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.run.suite_runs import REPO, STARQUAKE

META = {"index": 0, "time": 0, "process": "harness", "type": "info", "f": "meta",
        "detail": json.dumps({"seed": 3})}


def _run_dir(tmp_path: Path, valid: bool) -> Path:
    run = tmp_path / "explore-3" / "20261129-000000-3"
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text(json.dumps(META) + "\n")
    checkers = {"lost": {"valid": valid, "count": 0 if valid else 4}}
    (run / "results.json").write_text(json.dumps({"valid": valid, "checkers": checkers}))
    (run / "scenario.toml").write_text('name = "explore-3"\nseed = 3\n')
    return run


@pytest.mark.parametrize(("valid", "flags", "reason"), [
    (True, (), "not an invalid run (verdict valid): nothing to shrink"),
    (False, ("--anomaly", "duplicate"), "no duplicate anomaly in it; it has lost"),
])
def test_what_cannot_be_shrunk_is_refused_before_any_run(
        tmp_path: Path, valid: bool, flags: tuple[str, ...], reason: str) -> None:
    run = _run_dir(tmp_path, valid)
    done = subprocess.run([*STARQUAKE, "shrink", str(run), *flags], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{run}: {reason}" in done.stderr
    assert not list(tmp_path.glob("shrink-*"))  # nothing written
