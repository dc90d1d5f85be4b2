"""The console every command prints through."""

from __future__ import annotations

from rich.console import Console


def command_console() -> Console:
    """A console that never wraps a line. Run directories, `reproduce` commands, `pass` and
    `FAIL` lines and table rows are copied and searched in CI logs, where rich does not
    know the width and assumes 80 columns: a path cut in two there is a broken command."""
    return Console(soft_wrap=True)
