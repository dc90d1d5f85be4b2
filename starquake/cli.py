"""The `starquake` console script.

Each package contributes its own commands; this module only assembles them and turns
errors into the documented exit codes (click's usage error would otherwise exit 2, which
reads as an "unknown" verdict).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

import click

from history.errors import BAD_INPUT, ENVIRONMENT, StarquakeError
from history.version import DISTRIBUTION


class _LazyGroup(click.Group):
    """A group whose commands are imported when one is named: `starquake check` imports the
    checkers and not every other command's module (harness, docker, reports), about a
    second of a check's start. Each command's own heavy dependencies (pyspark, docker) are
    imported inside its body, so `starquake --help`, which imports them all, stays quick."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy
        """Command name -> `module:attribute` of its click command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy and cmd_name not in self.commands:
            module, _, attribute = self._lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, lazy={
    "check": "checkers.cli:check",
    "check-worker": "checkers.cli:check_worker",
    "synth": "checkers.cli:synth",
    "spark": "checkers.resident_cli:spark",
    "zk": "starquake.zk_cli:zk",
    "cluster": "starquake.cluster_cli:cluster",
    "scenario": "scenarios.cli:scenario",
    "run": "starquake.run.cli:run",
    "reproduce": "starquake.run.cli:reproduce",
    "serve": "starquake.serve_cli:serve",
    "suite": "starquake.run.suite:suite",
    "detect": "starquake.run.detect:detect",
    "explore": "starquake.run.explore:explore",
    "shrink": "starquake.run.shrink:shrink",
    "conform": "starquake.conform.cli:conform",
    "pulsar": "starquake.pulsar_cli:pulsar",
    "report": "reports.cli:report",
    "suite-index": "reports.cli:suite_index",
})
# The installed package's version (importlib.metadata), the one results.json, the report and
# the JUnit files name.
@click.version_option(package_name=DISTRIBUTION, prog_name="starquake",
                      message="%(prog)s %(version)s")
def starquake() -> None:
    """Jepsen-style testing for Pulsar-style messaging systems."""


@starquake.group(cls=_LazyGroup, lazy={
    "check": "starquake.bench.check:bench_check",
    "history": "starquake.bench.history:bench_history",
    "report": "starquake.bench.report:bench_report",
    "cluster": "starquake.bench.cluster:bench_cluster",
    "broker": "starquake.bench.broker:bench_broker",
    "fuzz": "starquake.bench.fuzz:bench_fuzz",
    "workload": "starquake.bench.workload:bench_workload",
})
def bench() -> None:
    """Benchmarks: each prints its figures and the ratios the targets are stated in."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line and exit with the documented code."""
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
