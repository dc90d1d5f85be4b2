"""`starquake run SCENARIO`: the command line of starquake/run/pipeline.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from checkers.spark_settings import SparkSettings, spark_options
from harness.backends import BACKENDS, backends_help


@click.command()
# A file, or a packaged name such as smoke/topic-faults (scenarios/catalogue.py).
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Fixes operations, keys and the fault schedule [scenario's, else random; "
                   "recorded either way].")
@click.option("--backend", type=click.Choice(tuple(BACKENDS)), default=None,
              help=f"{backends_help()} [scenario's topology.backend].")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("runs"), show_default=True,
              help="Runs go to RUNS_DIR/<scenario>/<timestamp>-<seed>/.")
@click.option("--without-mutants", is_flag=True,
              help="Run the scenario's clean twin: its mutants off, expecting valid.")
@spark_options
def run(scenario: Path, seed: int | None, backend: str | None, runs_dir: Path,
        without_mutants: bool, spark: SparkSettings) -> int:
    """Run SCENARIO: cluster, workload, faults, drain, checkers, report.

    Exits 0 valid, 1 invalid, 2 unknown, 3 bad input, 4 environment (no Docker engine, a
    node that will not start), 130 interrupted.
    """
    from scenarios.catalogue import resolve_scenario
    from starquake.output import command_console
    from starquake.run.pipeline import RunOptions
    from starquake.run.pipeline import run as run_scenario
    from starquake.run.summary import print_summary

    scenario = resolve_scenario(str(scenario))
    console = command_console()
    outcome = run_scenario(RunOptions(scenario, seed, backend, runs_dir, spark=spark,
                                      without_mutants=without_mutants), console)
    print_summary(console, outcome)
    return outcome.exit_code


@click.command()
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, path_type=Path))
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the new run goes [the runs directory RUN is in].")
@spark_options
def reproduce(run_dir: Path, runs_dir: Path | None, spark: SparkSettings) -> int:
    """Run RUN again: its scenario copy, seed and mutants, each fault aimed at the nodes
    it hit in RUN. `runs/latest` repeats the newest run.

    Exits as `run` does.
    """
    from starquake.output import command_console
    from starquake.run.pipeline import run as run_scenario
    from starquake.run.reproduce import replay_options
    from starquake.run.summary import print_summary

    console = command_console()
    outcome = run_scenario(dataclasses.replace(replay_options(run_dir, runs_dir), spark=spark),
                           console)
    print_summary(console, outcome)
    return outcome.exit_code
