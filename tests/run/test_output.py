"""What the commands print stays one line per line, whatever the width: a run directory or
a `reproduce` command copied from a CI log must work."""

from __future__ import annotations

import io

from starquake.output import command_console


def test_a_long_line_is_printed_whole_where_the_width_is_unknown() -> None:
    path = "runs/detect-10/scalable-children-before-parent-drained/" + "x" * 120
    console = command_console()
    console.file = io.StringIO()  # not a terminal: rich assumes 80 columns
    console.print(f"  pass  {path}  expected invalid, exit 1", markup=False)
    assert console.file.getvalue() == f"  pass  {path}  expected invalid, exit 1\n"
