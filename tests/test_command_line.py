"""The `starquake` command line: every command it lists can be loaded, and naming one
loads that command's module alone, so a quick command (a warm `check`) does not pay for
importing the harness, the nemesis or the reports."""

from __future__ import annotations

import subprocess
import sys

import click

from starquake.cli import bench, starquake


def test_every_listed_command_loads() -> None:
    for group in (starquake, bench):
        context = click.Context(group)
        names = group.list_commands(context)
        assert names
        for name in names:
            assert isinstance(group.get_command(context, name), click.Command), name


def test_naming_check_imports_the_checkers_and_not_the_other_commands() -> None:
    probe = """
import sys
from starquake.cli import main
try:
    main(["check", "--help"])
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    loaded = set(done.stdout.splitlines()[-1].split())
    assert "checkers.cli" in loaded
    assert not {"harness.backends", "reports.cli", "starquake.run.detect", "docker",
                "starquake.bench.check"} & loaded
