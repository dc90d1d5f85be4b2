"""The Spark settings every checking command takes: options, their environment variables,
and the hand-over from `starquake run` to the check worker it spawns."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from checkers.spark_settings import OWN, RESIDENT, SparkSettings, spark_options
from starquake.run.check_worker import CheckWorker


@click.command()
@spark_options
def _echo_settings(spark: SparkSettings) -> None:
    click.echo(repr(spark))


def _parsed(args: list[str], env: dict[str, str | None] | None = None) -> str:
    done = CliRunner().invoke(_echo_settings, args, env=env)
    assert done.exit_code == 0, done.output
    return done.output.strip()


def test_options_and_environment_give_the_settings(tmp_path: Path) -> None:
    given = SparkSettings("spark://10.0.0.2:7077", "10.0.0.1", "/opt/py/bin/python", tmp_path,
                          "1g")
    assert _parsed(given.check_args()) == repr(given)
    env = {"STARQUAKE_SPARK_MASTER": given.master, "STARQUAKE_SPARK_DRIVER_HOST": "10.0.0.1",
           "STARQUAKE_SPARK_PYTHON": "/opt/py/bin/python",
           "STARQUAKE_SPARK_SHARED_DIR": str(tmp_path), "STARQUAKE_SPARK_DRIVER_MEMORY": "1g"}
    assert _parsed([], env) == repr(given)
    assert _parsed(["--spark-master", "local[2]"], env) == repr(
        SparkSettings("local[2]", "10.0.0.1", "/opt/py/bin/python", tmp_path, "1g"))
    assert _parsed([], {"STARQUAKE_SPARK_REMOTE": None}) == repr(SparkSettings(remote=RESIDENT))


def test_without_a_spark_named_the_check_goes_to_the_resident_server() -> None:
    unset: dict[str, str | None] = {"STARQUAKE_SPARK_REMOTE": None}
    assert _parsed([], unset) == repr(SparkSettings(remote=RESIDENT))
    assert _parsed(["--spark-master", "local[2]"], unset) == repr(SparkSettings("local[2]"))
    assert _parsed(["--spark-remote", OWN], unset) == repr(SparkSettings())
    assert _parsed([], {"STARQUAKE_SPARK_REMOTE": OWN}) == repr(SparkSettings())
    assert _parsed(["--spark-master", "local[2]", "--spark-remote", RESIDENT], unset) == repr(
        SparkSettings("local[2]", remote=RESIDENT))


def test_run_hands_its_spark_settings_to_the_check_worker(tmp_path: Path) -> None:
    settings = SparkSettings("spark://10.0.0.2:7077", shared_dir=tmp_path)
    argv = CheckWorker(settings).argv()
    assert argv[argv.index("check-worker"):] == [
        "check-worker", "--spark-master", "spark://10.0.0.2:7077", "--spark-shared-dir",
        str(tmp_path), "--spark-driver-memory", "3g", "--spark-remote", OWN]


def test_a_driver_memory_that_is_no_size_is_refused_by_name() -> None:
    done = CliRunner().invoke(_echo_settings, ["--spark-driver-memory", "lots"])
    assert done.exit_code == 2
    assert "--spark-driver-memory" in done.output and "'lots'" in done.output
