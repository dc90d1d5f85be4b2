"""The packaged scenarios: found by name wherever the package is installed, listed by
`starquake scenario ls`, and accepted by `run`, `suite` and `validate` beside paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.catalogue import (
    SUITES,
    example_history,
    packaged_scenarios,
    resolve_scenario,
    resolve_suite,
    suites,
)
from scenarios.format import ScenarioError, load_scenario

REPO = Path(__file__).resolve().parents[2]


def _starquake(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "starquake", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_every_scenario_file_of_a_suite_is_packaged_under_its_name() -> None:
    on_disk = {f"{p.parent.name}/{p.stem}": p.resolve()
               for suite in SUITES for p in (REPO / "scenarios" / suite).glob("*.toml")}
    assert {name: path.resolve() for name, path in packaged_scenarios().items()} == on_disk
    assert list(suites()) == ["smoke", "full", "mutants", "conformance"]
    assert all(files == sorted(files) and files for files in suites().values())
    assert "smoke/topic-faults" in packaged_scenarios()


def test_a_scenario_resolves_by_name_with_or_without_suite_and_suffix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # outside the checkout, where no such path exists
    wanted = packaged_scenarios()["smoke/topic-faults"]
    for text in ("smoke/topic-faults", "topic-faults", "smoke/topic-faults.toml",
                 "topic-faults.toml", "scenarios/smoke/topic-faults.toml"):
        assert resolve_scenario(text) == wanted, text


def test_an_existing_path_wins_over_a_packaged_name(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "smoke").mkdir()
    mine = tmp_path / "smoke" / "topic-faults"
    mine.write_text('name = "mine"\n')
    monkeypatch.chdir(tmp_path)
    assert resolve_scenario("smoke/topic-faults") == Path("smoke/topic-faults")
    (tmp_path / "smoke" / "a.toml").write_text('name = "a"\n')
    assert resolve_suite("smoke") == [Path("smoke/a.toml")]


def test_an_unknown_name_is_one_line_naming_it_and_the_known_names() -> None:
    with pytest.raises(ScenarioError) as error:
        resolve_scenario("smoke/no-such")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("smoke/no-such: no such scenario file or packaged scenario")
    assert all(name in message for name in packaged_scenarios())
    with pytest.raises(ScenarioError) as error:
        resolve_suite("nightly")
    assert str(error.value).startswith("nightly: no such scenario file, directory or "
                                       "packaged suite; suites: smoke, full, mutants, conformance;")


def test_a_directory_is_not_a_scenario(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="is a directory"):
        resolve_scenario(str(tmp_path))


def test_a_suite_resolves_to_its_files_or_to_one_scenario(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_suite("mutants") == suites()["mutants"]
    assert resolve_suite("scenarios/full/") == suites()["full"]
    assert resolve_suite("topic-kill") == [packaged_scenarios()["smoke/topic-kill"]]
    assert resolve_suite("mutants/scalable-skip-terminate.toml") == [
        packaged_scenarios()["mutants/scalable-skip-terminate"]]


def test_an_empty_directory_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no scenario files"):
        resolve_suite(str(tmp_path))


def test_the_example_history_ships_beside_the_history_package() -> None:
    path = example_history()
    assert path.name == "history.jsonl" and path.is_file()
    assert path.read_text().count("\n") == 506


def test_scenario_ls_lists_each_suite_with_kind_verdict_and_description(tmp_path: Path) -> None:
    done = _starquake("scenario", "ls", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.endswith(":")] == ["smoke:", "full:", "mutants:",
                                                              "conformance:"]
    for name, path in packaged_scenarios().items():
        scenario = load_scenario(path)
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        assert line.split()[1:3] == [scenario.workload.kind, scenario.expected]
        assert line.endswith(scenario.description)


def test_validate_takes_packaged_names_and_files(tmp_path: Path) -> None:
    done = _starquake("scenario", "validate", "smoke/topic-faults", "scalable-skip-terminate",
                      str(REPO / "scenarios/full/topic-faults-long.toml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "smoke/topic-faults: ok (topic-faults, expects valid)",
        "scalable-skip-terminate: ok (scalable-skip-terminate, expects invalid)",
        f"{REPO / 'scenarios/full/topic-faults-long.toml'}: ok (topic-faults-long, "
        "expects valid)"]


def test_run_refuses_an_unknown_name_with_the_known_ones(tmp_path: Path) -> None:
    done = _starquake("run", "no-such-scenario", "--runs-dir", str(tmp_path / "runs"),
                      cwd=tmp_path)
    assert done.returncode == 3
    assert "no-such-scenario: no such scenario file or packaged scenario" in done.stderr
    assert "smoke/topic-kill" in done.stderr
    assert not (tmp_path / "runs").exists()
