"""A run whose check fails: for the environment (a Spark worker that died, exit 4) the
run could not finish and a suite, explore or detect goes on from it; for bad input (exit
3) the command stops, as for any bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from history.errors import BAD_INPUT, ENVIRONMENT
from starquake.run import suite
from starquake.run.pipeline import CheckFailed, RunOptions


def _failing_with(code: int) -> object:
    def run(*_args: object) -> None:
        raise CheckFailed(f"starquake check RUN exited {code}; see RUN/check.log", code)
    return run


def test_a_check_that_died_is_a_run_that_could_not_finish(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "run_scenario", _failing_with(ENVIRONMENT))
    result = suite.judged_run(RunOptions(Path("s.toml")), ("valid", ()), Console(quiet=True),
                              None)  # type: ignore[arg-type]
    assert result.exit_code == ENVIRONMENT and result.run_dir is None and not result.passed


def test_a_check_that_found_bad_input_stops_the_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "run_scenario", _failing_with(BAD_INPUT))
    with pytest.raises(CheckFailed) as raised:
        suite.judged_run(RunOptions(Path("s.toml")), ("valid", ()), Console(quiet=True),
                         None)  # type: ignore[arg-type]
    assert raised.value.exit_code == BAD_INPUT
