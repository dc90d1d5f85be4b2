"""`starquake scenario`: list the packaged scenarios, and check scenario files before a run
needs them."""

from __future__ import annotations

import dataclasses
import json

import click

from scenarios.catalogue import packaged_scenarios, resolve_scenario
from scenarios.format import load_scenario
from scenarios.plan import schedule_for


@click.group()
def scenario() -> None:
    """Scenario files (docs/scenarios.md)."""


@scenario.command("ls")
def list_scenarios() -> None:
    """List the scenarios that ship with starquake, by suite: the name `run`, `suite` and
    `validate` accept, the workload, the expected verdict and what it shows."""
    rows = []
    for name, path in packaged_scenarios().items():
        resolved = load_scenario(path)
        rows.append((name, resolved.workload.kind, resolved.expected, resolved.description))
    name_width = max((len(r[0]) for r in rows), default=0)
    kind_width = max((len(r[1]) for r in rows), default=0)
    suite = None
    for name, kind, expected, description in rows:
        if name.split("/", 1)[0] != suite:
            if suite is not None:
                click.echo()
            suite = name.split("/", 1)[0]
            click.echo(f"{suite}:")
        click.echo(f"  {name:<{name_width}}  {kind:<{kind_width}}  {expected:<7}  "
                   f"{description}".rstrip())


@scenario.command()
@click.argument("scenarios", nargs=-1, required=True, metavar="SCENARIO...")
@click.option("--show", is_flag=True, help="Print each scenario as resolved, with defaults.")
def validate(scenarios: tuple[str, ...], show: bool) -> None:
    """Validate each SCENARIO (a file, or a packaged name such as smoke/topic-faults, see
    `starquake scenario ls`): its keys, and its fault schedule on the deployment it names
    (every fault one it can take, every target a node); exits 3 at the first problem,
    naming file, key and expectation."""
    for text in scenarios:
        resolved = load_scenario(resolve_scenario(text))
        schedule_for(resolved, resolved.seed or 0)
        click.echo(f"{text}: ok ({resolved.name}, expects {resolved.expected})")
        if show:
            click.echo(json.dumps(dataclasses.asdict(resolved), indent=2, default=str))
