"""`starquake conform --target FILE`: the command line of starquake/conform/pipeline.py."""

from __future__ import annotations

from pathlib import Path

import click

from checkers.spark_settings import SparkSettings, spark_options

# starquake.conform.features.FEATURE_NAMES, spelled out so that `starquake --help` imports
# nothing heavy (a unit test keeps the two equal).
FEATURE_CHOICES = ("client-contract", "durability-kill", "durability-storage-kill",
                   "durability-pause", "durability-partition", "durability-metadata-cut",
                   "metadata-loss-shutdown", "scalable-topics", "geo-replication",
                   "tenant-migration", "authentication")


def _features(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    unknown = [name for name in names if name not in FEATURE_CHOICES]
    if unknown:
        raise click.BadParameter(f"unknown feature {', '.join(unknown)}; features are "
                                 f"{', '.join(FEATURE_CHOICES)}")
    return names


@click.command()
@click.option("--target", "target_file", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="The target file describing the system (docs/testing-your-implementation.md).")
@click.option("--features", default="", callback=_features,
              help="Comma-separated features to check [all of them].")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="One seed for every feature's run [random; recorded].")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("runs"), show_default=True,
              help="Results go to RUNS_DIR/conform/<target>/<timestamp>-<seed>/.")
@spark_options
def conform(target_file: Path, features: tuple[str, ...], seed: int | None,
            runs_dir: Path, spark: SparkSettings) -> int:
    """Check a Pulsar-compatible system that starquake did not start, feature by feature:
    the client contract, durability under each fault it can take, scalable topics,
    geo-replication, tenant migration.

    Writes conformance.html, conformance.json and junit.xml. Exits 0 when every feature
    that ran passed, 1 when one failed, 2 when a verdict is unknown, 3 for a bad target
    file, 4 when the target cannot be reached.
    """
    from starquake.conform.pipeline import ConformOptions
    from starquake.conform.pipeline import conform as run_conformance
    from starquake.output import command_console

    console = command_console()
    outcome = run_conformance(ConformOptions(target_file, features, seed, runs_dir, spark), console)
    console.print(f"conformance: {outcome.directory / 'conformance.html'}", markup=False)
    return outcome.exit_code
