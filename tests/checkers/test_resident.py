"""The resident Spark Connect server (`starquake spark`, `--spark-remote local-resident`):
its state and watchdog without Spark, and checks through it that judge as a Spark of the
command's own does."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from checkers import resident
from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from checkers.resident import stop_resident, wait_until_answering
from checkers.resident_state import (
    HOME_ENV,
    LOOPBACK,
    ServerState,
    forget_state,
    is_server,
    read_state,
    server_marker,
    touch,
    write_state,
)
from checkers.resident_watchdog import watch
from checkers.spark_settings import SparkSettings, spark_options
from checkers.synthetic import SyntheticSpec, write_jsonl
from history.reader import discover_runs

STARQUAKE = [sys.executable, "-m", "starquake"]
EXAMPLE = Path(__file__).parents[2] / "history" / "examples" / "split-topic" / "history.jsonl"


@click.command()
@spark_options
def _echo_settings(spark: SparkSettings) -> None:
    click.echo(repr(spark))


def test_the_remote_comes_from_its_option_or_environment_and_reaches_the_worker() -> None:
    given = SparkSettings(remote="local-resident")
    assert given.check_args()[-2:] == ["--spark-remote", "local-resident"]
    by_option = CliRunner().invoke(_echo_settings, given.check_args())
    by_env = CliRunner().invoke(_echo_settings, [],
                                env={"STARQUAKE_SPARK_REMOTE": "sc://10.0.0.2:15002"})
    assert by_option.output.strip() == repr(given)
    assert by_env.output.strip() == repr(SparkSettings(remote="sc://10.0.0.2:15002"))


def test_a_remote_that_is_no_spark_connect_address_is_refused_by_name() -> None:
    done = CliRunner().invoke(_echo_settings, ["--spark-remote", "10.0.0.2:15002"])
    assert done.exit_code == 2
    assert "--spark-remote" in done.output and "sc://HOST:PORT" in done.output


def _state(pid: int, home: Path) -> ServerState:
    return ServerState(pid, 1, str(home / "server.log"), 0, 1, "1g", "code", "id", 0.0)


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line names `tmp_path` as a server's does, recorded as the
    resident server; stopped afterwards whatever the test did."""
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                               server_marker(tmp_path)])
    write_state(tmp_path, _state(server.pid, tmp_path))
    yield server
    server.kill()
    server.wait()


def test_a_server_whose_command_line_changes_while_it_starts_is_waited_for(
        tmp_path: Path) -> None:
    """spark-submit execs spark-class, which execs the JVM: a start is watched by the
    server's pid, not by the marker on a command line that is being replaced. (Judged by
    the marker, about one start in three failed on a quiet machine.)"""
    listener = socket.socket()
    listener.bind((LOOPBACK, 0))
    # Its command line names the home as a server's does, until it execs a command that
    # does not; the port answers only later.
    server = subprocess.Popen(["/bin/sh", "-c", "sleep 0.3; exec sleep 30",
                               server_marker(tmp_path)])
    opening = threading.Timer(1.5, listener.listen)
    opening.start()
    try:
        wait_until_answering(tmp_path, server.pid, listener.getsockname()[1],
                             tmp_path / "server.log")
        assert server.poll() is None
    finally:
        opening.cancel()
        server.kill()
        server.wait()
        listener.close()


def test_a_server_interrupted_while_it_starts_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C while the server starts must not leave it running: no state file and no
    watchdog exist yet, so nothing else would stop it."""
    started: list[subprocess.Popen[bytes]] = []

    def detached(argv: list[str], _output: Path, _home: Path, _env: object) -> int:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                                         server_marker(tmp_path)]))
        return started[-1].pid

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(resident, "_detached", detached)
    monkeypatch.setattr(resident, "wait_until_answering", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            resident._start(tmp_path, "1g", 60)
        assert started[0].wait(timeout=40) is not None
        assert read_state(tmp_path) is None
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_the_watchdog_stops_an_idle_server_and_forgets_it(
        tmp_path: Path, fake_server: subprocess.Popen[bytes]) -> None:
    touch(tmp_path)
    started = time.monotonic()
    reason = watch(tmp_path, fake_server.pid, idle_s=1.0)
    assert "unused" in reason and time.monotonic() - started < 20
    assert fake_server.wait(timeout=10) is not None
    assert read_state(tmp_path) is None


def test_the_watchdog_keeps_a_server_a_command_holds_in_use(
        tmp_path: Path, fake_server: subprocess.Popen[bytes]) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from checkers.resident_state import hold_in_use; hold_in_use(Path(sys.argv[1])); "
         "print('held', flush=True); time.sleep(300)", str(tmp_path)],
        stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        outcome: list[str] = []
        watcher = threading.Thread(target=lambda: outcome.append(
            watch(tmp_path, fake_server.pid, idle_s=1.0)))
        watcher.start()
        time.sleep(4)
        assert is_server(fake_server.pid, tmp_path) and not outcome
    finally:
        holder.kill()
        holder.wait()
    watcher.join(timeout=20)
    assert outcome and "unused" in outcome[0]
    assert not is_server(fake_server.pid, tmp_path)


def test_a_state_file_of_another_version_still_names_its_server(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(json.dumps({"pid": 12345, "port": 7,
                                                     "retired": True}))
    state = read_state(tmp_path)
    assert state is not None and (state.pid, state.port, state.code) == (12345, 7, "")
    forget_state(tmp_path, 999)
    assert read_state(tmp_path) is not None
    forget_state(tmp_path, 12345)
    assert read_state(tmp_path) is None


def test_status_and_down_without_a_server(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from starquake.cli import main

    monkeypatch.setenv(HOME_ENV, str(tmp_path))
    for command, code in (("status", 4), ("down", 0)):
        with pytest.raises(SystemExit) as done:
            main(["spark", command])
        assert done.value.code == code
    assert stop_resident() is None


def _verdicts(results: dict[str, object]) -> dict[str, object]:
    """What must not depend on where Spark runs: every checker's verdict, count and
    examples, and the statistics."""
    checkers = results["checkers"]
    assert isinstance(checkers, dict)
    return {"valid": results["valid"], "events": results["events"], "stats": results["stats"],
            "checkers": {name: {k: v for k, v in entry.items() if k != "error"}
                         for name, entry in checkers.items()}}


@pytest.fixture
def resident_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state directory of the test's own; the server in it stopped afterwards."""
    home = tmp_path / "resident"
    monkeypatch.setenv(HOME_ENV, str(home))
    yield home
    stop_resident()


@pytest.mark.spark
@pytest.mark.slow
def test_checks_through_the_resident_server_judge_as_a_local_spark(
        tmp_path: Path, resident_home: Path, spark: SparkSession) -> None:
    runs = tmp_path / "runs"
    for name in ("example", "broken"):
        (runs / name).mkdir(parents=True)
    (runs / "example" / "history.jsonl").write_bytes(EXAMPLE.read_bytes())
    write_jsonl(SyntheticSpec(messages=300, keys=4, inject={"lost": 2, "duplicate": 1,
                                                             "order": 1}),
                runs / "broken" / "history.jsonl")
    local = {result.run: _verdicts(result.results) for result in check_runs(
        spark, {run: prepare(path) for run, path in discover_runs(runs).items()},
        CheckSettings())}

    # Two checks at once from cold: the first to take the lock starts the server, the
    # other waits for it and shares it.
    env = {**os.environ, HOME_ENV: str(resident_home), "STARQUAKE_SPARK_REMOTE": "local-resident",
           "STARQUAKE_SPARK_DRIVER_MEMORY": "1g"}
    checks = [subprocess.Popen([*STARQUAKE, "check", str(runs / name), "--out",
                                str(tmp_path / f"{name}.json")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for name in ("example", "broken")]
    outputs = [check.communicate(timeout=600)[0] for check in checks]
    assert [check.returncode for check in checks] == [0, 1], outputs

    state = read_state(resident_home)
    assert state is not None and is_server(state.pid, resident_home)
    servers = subprocess.run(["pgrep", "-f", server_marker(resident_home)],
                             capture_output=True, text=True).stdout.split()
    assert servers == [str(state.pid)]
    for name in ("example", "broken"):
        remote = json.loads((tmp_path / f"{name}.json").read_text())
        assert _verdicts(remote) == local[name]

    # The same server as any Spark Connect server: a session of the check's own, the
    # checkers uploaded to it.
    direct = subprocess.run([*STARQUAKE, "check", str(runs / "broken"), "--spark-remote",
                             state.url, "--out", str(tmp_path / "direct.json")],
                            env=env, capture_output=True, text=True, timeout=600)
    assert direct.returncode == 1, direct.stdout + direct.stderr
    assert _verdicts(json.loads((tmp_path / "direct.json").read_text())) == local["broken"]

    status = subprocess.run([*STARQUAKE, "spark", "status"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert status.returncode == 0 and state.url in status.stdout, status
    stopped = stop_resident()
    assert stopped is not None and stopped.pid == state.pid
    assert not is_server(state.pid, resident_home)
