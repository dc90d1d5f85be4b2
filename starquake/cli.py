"""The `starquake` console script.

Each package contributes its own commands; this module only assembles them and turns
errors into the documented exit codes (click's usage error would otherwise exit 2, which
reads as an "unknown" verdict).
"""

from __future__ import annotations

import sys
import traceback

import click

from history.errors import BAD_INPUT, ENVIRONMENT, StarquakeError
from history.version import DISTRIBUTION


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
# The installed package's version (importlib.metadata), the one results.json, the report and
# the JUnit files name.
@click.version_option(package_name=DISTRIBUTION, prog_name="starquake",
                      message="%(prog)s %(version)s")
def starquake() -> None:
    """Jepsen-style testing for Pulsar-style messaging systems."""


@starquake.group()
def bench() -> None:
    """Benchmarks: each prints its figures and the ratios the targets are stated in."""


def _register() -> None:
    # Commands import their heavy dependencies (pyspark, docker) inside their bodies so
    # that `starquake --help` stays fast.
    from checkers.cli import check, check_worker, synth
    from checkers.resident_cli import spark
    from reports.cli import report, suite_index
    from scenarios.cli import scenario
    from starquake.bench.broker import bench_broker
    from starquake.bench.check import bench_check
    from starquake.bench.cluster import bench_cluster
    from starquake.bench.fuzz import bench_fuzz
    from starquake.bench.history import bench_history
    from starquake.bench.report import bench_report
    from starquake.bench.workload import bench_workload
    from starquake.cluster_cli import cluster
    from starquake.conform.cli import conform
    from starquake.pulsar_cli import pulsar
    from starquake.run.cli import reproduce, run
    from starquake.run.detect import detect
    from starquake.run.explore import explore
    from starquake.run.shrink import shrink
    from starquake.run.suite import suite
    from starquake.serve_cli import serve
    from starquake.zk_cli import zk

    starquake.add_command(check)
    starquake.add_command(check_worker)
    starquake.add_command(synth)
    starquake.add_command(spark)
    starquake.add_command(zk)
    starquake.add_command(cluster)
    starquake.add_command(scenario)
    starquake.add_command(run)
    starquake.add_command(reproduce)
    starquake.add_command(serve)
    starquake.add_command(suite)
    starquake.add_command(detect)
    starquake.add_command(explore)
    starquake.add_command(shrink)
    starquake.add_command(conform)
    starquake.add_command(pulsar)
    starquake.add_command(report)
    starquake.add_command(suite_index)
    bench.add_command(bench_check, "check")
    bench.add_command(bench_history, "history")
    bench.add_command(bench_report, "report")
    bench.add_command(bench_cluster, "cluster")
    bench.add_command(bench_broker, "broker")
    bench.add_command(bench_fuzz, "fuzz")
    bench.add_command(bench_workload, "workload")


def main(argv: list[str] | None = None) -> None:
    """Run the command line and exit with the documented code."""
    _register()
    try:
        rc = starquake.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        click.echo(f"starquake: usage: {exc.format_message()}", err=True)
        sys.exit(BAD_INPUT)
    except click.ClickException as exc:
        click.echo(f"starquake: {exc.format_message()}", err=True)
        sys.exit(BAD_INPUT)
    except StarquakeError as exc:
        click.echo(f"starquake: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:
        # A fault of starquake itself. Python would exit 1, which reads as "invalid" to
        # whoever only looks at the code; the traceback is for us, the last line for them.
        traceback.print_exc()
        click.echo(f"starquake: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(ENVIRONMENT)
    sys.exit(rc if isinstance(rc, int) else 0)
