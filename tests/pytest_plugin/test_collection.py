"""The pytest plugin collects scenarios only when asked: `--starquake` names, or scenario
files and directories named on the command line; never a project's other TOML files, nor
anything when pytest walks directories on its own. Nothing here starts a cluster: the one
run tried is aimed at a target nobody serves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow  # each case starts a pytest of its own, a few seconds each

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
REPO = SCENARIOS.parents[2]


def _pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a process of its own: the plugin comes from its entry point, as for users."""
    return pytester.runpytest_subprocess(*args)


def _collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "[seed=" in line and " " not in line]


def test_packaged_names_collect_one_item_each_with_a_stable_id(
        pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "--starquake", "smoke", "--starquake", "smoke/topic-kill",
                     "--starquake-seed", "3", "--collect-only", "-q")
    collected = _collected(result)
    assert "smoke/topic-kill[seed=3]" in collected
    assert len(collected) == len(set(collected)) == 6, result.outlines
    assert all(item.startswith("smoke/") for item in collected)


def test_without_a_seed_the_id_says_random(pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "--starquake", "smoke/topic-kill", "--collect-only", "-q")
    assert _collected(result) == ["smoke/topic-kill[seed=random]"]


def test_keyword_selection_works_on_scenario_names(pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "--starquake", "smoke", "-k", "kill", "--collect-only", "-q")
    assert _collected(result) == ["smoke/topic-kill[seed=random]"]


def test_a_directory_named_on_the_command_line_gives_its_scenarios_only(
        pytester: pytest.Pytester) -> None:
    shutil.copytree(SCENARIOS, pytester.path / "scenarios")
    (pytester.path / "scenarios" / "settings.toml").write_text('name = "x"\n[tool]\na = 1\n')
    pytester.makepyprojecttoml('[project]\nname = "someone-else"\n')
    result = _pytest(pytester, "scenarios", "--collect-only", "-q")
    assert sorted(_collected(result)) == [
        "scenarios/contract-delayed-under-mutant.toml::contract-delayed-under-mutant"
        "[seed=random]",
        "scenarios/contract-delayed.toml::contract-delayed[seed=random]",
        "scenarios/topic-undrained.toml::topic-undrained[seed=random]"]


def test_a_project_run_collects_no_toml(pytester: pytest.Pytester) -> None:
    """Directories pytest walks into by itself (the project's root, `testpaths`) never
    give a scenario, even one that is a valid scenario file."""
    shutil.copytree(SCENARIOS, pytester.path / "tests" / "scenarios")
    pytester.makepyfile(**{"tests/test_a": "def test_a():\n    pass\n"})
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    for args in ((), (".",), ("tests",)):
        result = _pytest(pytester, *args, "--collect-only", "-q")
        assert _collected(result) == [], (args, result.outlines)
        result.assert_outcomes()
        assert "1 test collected" in result.outlines[-1], (args, result.outlines)


def test_a_toml_file_named_that_is_no_scenario_is_a_collection_error(
        pytester: pytest.Pytester) -> None:
    broken = pytester.path / "broken.toml"
    broken.write_text('name = "broken"\nduration_s = "long"\n[workload]\nkind = "topic"\n')
    result = _pytest(pytester, str(broken), "--collect-only", "-q")
    result.assert_outcomes(errors=1)
    assert any("broken.toml" in line and "duration_s" in line for line in result.outlines)


def test_an_unknown_name_is_a_collection_error_naming_the_known_ones(
        pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "--starquake", "smoke/no-such", "--collect-only", "-q")
    result.assert_outcomes(errors=1)
    assert any(line.startswith("--starquake smoke/no-such: no such scenario")
               and "smoke/topic-kill" in line for line in result.outlines)


def test_bad_options_are_usage_errors(pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "--starquake", "smoke", "--starquake-spark-driver-memory",
                     "lots", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--starquake-spark-driver-memory 'lots': expected a size*"])
    missing = _pytest(pytester, "--starquake", "smoke", "--starquake-target", "nowhere.toml")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR


def test_p_no_starquake_turns_it_off(pytester: pytest.Pytester) -> None:
    result = _pytest(pytester, "-p", "no:starquake", "--starquake", "smoke", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --starquake*"])


def test_a_run_that_cannot_start_is_an_error_and_lf_picks_it_again(
        pytester: pytest.Pytester) -> None:
    """A target nobody serves (the example's ports moved to ones nothing listens on): the
    item errors in setup with starquake's one line, `-x` stops there, and `--lf` selects
    that item alone next time."""
    example = (REPO / "examples/targets/reference-serve.toml").read_text()
    pytester.path.joinpath("t.toml").write_text(
        example.replace(":1665", ":4").replace(":1808", ":5"))
    args = ("--starquake", "smoke", "--starquake-target", "t.toml")
    result = _pytest(pytester, *args, "-x")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["smoke/*[[]seed=random]: could not run: cannot reach *"])
    assert not any("During handling" in line for line in result.outlines)
    again = _pytest(pytester, *args, "--lf", "--collect-only", "-q")
    assert len(_collected(again)) == 1
    assert _collected(again)[0] in "\n".join(result.outlines)
