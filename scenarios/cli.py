"""`starquake scenario validate`: check scenario files before a run needs them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from scenarios.format import load_scenario


@click.group()
def scenario() -> None:
    """Scenario files (docs/scenarios.md)."""


@scenario.command()
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--show", is_flag=True, help="Print each scenario as resolved, with defaults.")
def validate(files: tuple[Path, ...], show: bool) -> None:
    """Validate FILES; exits 3 at the first problem, naming file, key and expectation."""
    for path in files:
        resolved = load_scenario(path)
        click.echo(f"{path}: ok ({resolved.name}, expects {resolved.expected})")
        if show:
            click.echo(json.dumps(dataclasses.asdict(resolved), indent=2, default=str))
