"""`starquake explore`'s options that need no cluster: `--target` and `--backend` are one
or the other, mutants are not asked of a third party's system, `--parallel 2` is refused
where two runs would disturb each other or exhaust the machine; each is exit 3 with one
line, before anything is drawn or started. And `--parallel 2` itself, with its runs faked:
two at a time, results in seed order, the budget kept, every line naming its scenario."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from history.errors import ENVIRONMENT, BadInput
from starquake.run import explore, lanes
from starquake.run.check_worker import Judge
from starquake.run.explore_target import target_command
from starquake.run.lanes import Expected, PrefixedLines, RunOne, run_in_lanes
from starquake.run.pipeline import CheckFailed, RunInterrupted, RunOptions
from starquake.run.suite import SuiteResult
from tests.run.suite_runs import REPO

RUN_S = 1.5


def _explore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "starquake", "explore", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("args", "named"), [
    (("--target", "t.toml", "--backend", "local"), ("--target", "--backend")),
    (("--target", "t.toml", "--mutants", "no-fencing"), ("--mutants", "--target")),
    (("--target", "t.toml", "--parallel", "2"), ("--parallel", "--target", "faults")),
    (("--parallel", "3", "--backend", "local"), ("--parallel",)),
    (("--workloads", "topic,queue", "--backend", "local"), ("--workloads", "queue")),
    (("--workloads", "scalable", "--backend", "apache-pulsar"),
     ("--workloads", "apache-pulsar", "none")),
])
def test_options_that_do_not_go_together_are_exit_3_in_one_line(
        args: tuple[str, ...], named: tuple[str, ...], tmp_path: Path) -> None:
    done = _explore(*args, "--seeds", "2", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 3, done.stdout + done.stderr
    line, = done.stderr.strip().splitlines()
    assert all(word in line for word in named), line
    assert not (tmp_path / "runs").exists()


def test_two_apache_pulsar_runs_at_once_are_refused_where_memory_is_short(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "available_memory_gib", lambda: 7.5)
    with pytest.raises(BadInput, match=r"needs about 12 GiB .* has 7\.5 GiB"):
        explore.check_options(None, "apache-pulsar", (), 2)
    explore.check_options(None, "apache-pulsar", (), 1)
    explore.check_options(None, "local", (), 2)  # our nodes are small
    monkeypatch.setattr(lanes, "available_memory_gib", lambda: 20.0)
    explore.check_options(None, "apache-pulsar", (), 2)


def fake_run(options: RunOptions, expected: Expected, console: Console,
             judge: Judge) -> SuiteResult:
    """A run that only takes its time, noting when; seed 2's is invalid. Module-level: a
    lane is a spawned process, which finds it by name."""
    seed = int(options.scenario.stem.removeprefix("explore-"))
    with (options.runs_dir / "times.txt").open("a") as times:
        times.write(f"{seed} start {time.monotonic()}\n")
    console.print(f"load for {RUN_S} s")
    time.sleep(RUN_S)
    with (options.runs_dir / "times.txt").open("a") as times:
        times.write(f"{seed} end {time.monotonic()}\n")
    return SuiteResult(options.scenario, expected[0], 1 if seed == 2 else 0,
                       options.runs_dir / options.scenario.stem)


def failing_run(options: RunOptions, expected: Expected, console: Console,
                judge: Judge) -> SuiteResult:
    """Seed 2's run cannot be judged (bad input, which ends a suite); the others are."""
    if options.scenario.stem == "explore-2":
        raise CheckFailed("starquake check exited 3", 3)
    return fake_run(options, expected, console, judge)


def dying_run(options: RunOptions, expected: Expected, console: Console,
              judge: Judge) -> SuiteResult:
    """Seed 2's lane dies outright (as the OOM killer would end it)."""
    if options.scenario.stem == "explore-2":
        os._exit(9)
    return fake_run(options, expected, console, judge)


def long_run(options: RunOptions, expected: Expected, console: Console,
             judge: Judge) -> SuiteResult:
    """A run far longer than the test, which notes the interrupt that ends it."""
    seed = options.scenario.stem.removeprefix("explore-")
    try:
        (options.runs_dir / f"{seed}.started").touch()
        time.sleep(120)
    except KeyboardInterrupt:
        (options.runs_dir / f"{seed}.interrupted").touch()
        raise
    return fake_run(options, expected, console, judge)


def _lanes(tmp_path: Path, seeds: int, keep_going: Callable[[], bool] = lambda: True,
           run: RunOne = fake_run
           ) -> tuple[list[SuiteResult], dict[int, tuple[float, float]]]:
    files = [tmp_path / f"explore-{seed}.toml" for seed in range(1, seeds + 1)]
    console = Console(file=sys.stdout)
    results = list(run_in_lanes(files, dict.fromkeys(files, ("valid", ())),
                                RunOptions(files[0], runs_dir=tmp_path), console,
                                keep_going, 2, run=run))
    marks: dict[int, dict[str, float]] = {}
    for line in (tmp_path / "times.txt").read_text().splitlines():
        seed, what, at = line.split()
        marks.setdefault(int(seed), {})[what] = float(at)
    return results, {seed: (m["start"], m["end"]) for seed, m in marks.items()}


def test_two_runs_go_at_once_and_results_keep_seed_order(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    results, spans = _lanes(tmp_path, 4)
    assert [r.scenario.stem for r in results] == [f"explore-{n}" for n in range(1, 5)]
    assert [r.exit_code for r in results] == [0, 1, 0, 0]
    assert spans[1][0] < spans[2][1] and spans[2][0] < spans[1][1]  # 1 and 2 overlap
    assert spans[3][0] < spans[4][1] and spans[4][0] < spans[3][1]
    busy = max(end for _, end in spans.values()) - min(start for start, _ in spans.values())
    assert busy < 3 * RUN_S  # two at a time: one after another would take 4 * RUN_S
    lines = capfd.readouterr().out.splitlines()
    for seed in range(1, 5):
        assert f"[explore-{seed}] load for {RUN_S} s" in lines
        assert f"[explore-{seed}] suite: {seed}/4 {tmp_path / f'explore-{seed}.toml'}" in lines


def test_no_run_starts_once_the_budget_is_spent(tmp_path: Path) -> None:
    asked = iter([True, True, False])
    results, spans = _lanes(tmp_path, 5, keep_going=lambda: next(asked))
    assert [r.scenario.stem for r in results] == ["explore-1", "explore-2"]
    assert set(spans) == {1, 2}


def test_an_error_that_ends_a_suite_ends_the_command_once_the_other_run_ends(
        tmp_path: Path) -> None:
    with pytest.raises(CheckFailed, match="exited 3"):
        _lanes(tmp_path, 4, run=failing_run)
    times = (tmp_path / "times.txt").read_text()
    assert "1 end" in times and "3 " not in times  # seed 1 finished, nothing more started


def test_a_lane_that_dies_is_its_runs_failure_to_finish_and_is_replaced(
        tmp_path: Path) -> None:
    results, spans = _lanes(tmp_path, 4, run=dying_run)
    assert [(r.scenario.stem, r.exit_code, r.run_dir is None) for r in results] == [
        ("explore-1", 0, False), ("explore-2", ENVIRONMENT, True), ("explore-3", 0, False),
        ("explore-4", 0, False)]
    assert set(spans) == {1, 3, 4}


@pytest.mark.parametrize("background", [False, True])
def test_a_ctrl_c_is_passed_on_to_each_run_under_way_once(tmp_path: Path,
                                                          background: bool) -> None:
    """In the background (started by a shell without job control, as nohup or a CI
    runner does) SIGINT comes ignored, and the command is stopped with a SIGTERM: the
    lanes, which inherit the ignored SIGINT, still take the one passed on to them."""
    def interrupt_once_both_run() -> None:
        while len(list(tmp_path.glob("*.started"))) < 2:
            time.sleep(0.1)
        main = threading.main_thread().ident
        assert main is not None
        signal.pthread_kill(main, signal.SIGTERM if background else signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN if background
                             else signal.default_int_handler)
    threading.Thread(target=interrupt_once_both_run, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(RunInterrupted):
            _lanes(tmp_path, 4, run=long_run)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 60
    assert sorted(p.name for p in tmp_path.glob("*.interrupted")) == ["1.interrupted",
                                                                     "2.interrupted"]


def test_a_lane_prints_whole_lines_after_its_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    lines = PrefixedLines(sys.stdout, "[explore-7] ")
    lines.write("draining\nchec")
    lines.write("king\n")
    assert capsys.readouterr().out == "[explore-7] draining\n[explore-7] checking\n"


def test_a_target_runs_command_draws_its_seed_again_among_the_same_workloads() -> None:
    top, target = Path("runs/x"), Path("t.toml")
    assert target_command(target, Path("s/explore-7.toml"), top) == (
        "starquake explore --target t.toml --seed 7 --runs-dir runs/x")
    assert target_command(target, Path("s/explore-topic+geo-7.toml"), top,
                          ("topic", "geo")) == (
        "starquake explore --target t.toml --seed 7 --workloads topic,geo --runs-dir runs/x")
