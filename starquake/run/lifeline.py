"""A check worker's lifeline: a small process that ends the worker, and every process
below it (its Spark JVM), when the command that started them dies without closing the
worker (SIGKILL, a crash).

The command holds the write end of a pipe whose read end only this process has. Closing
the worker, the command first writes RELEASE and this process leaves the worker alone;
an end of file with nothing written means the command is gone, and the worker's tree is
killed at once rather than checking on for 20 s or more and only then reading the end of
its input. Run as a script (`python -I -S lifeline.py FD PID`), standard library only, so
it starts in a few milliseconds and needs none of starquake's imports.

On Linux the tree is read from /proc; elsewhere only the worker is killed, and its JVM
ends as PySpark's gateway does when its Python's pipe closes.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

RELEASE = b"r"
"""What the command writes when it ends the worker itself."""


def main(argv: list[str]) -> None:
    read_end, worker = int(argv[1]), int(argv[2])
    # Ctrl-C reaches the whole process group; the command then closes the worker itself,
    # and releases this process when it has.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        said = os.read(read_end, 1)
    except OSError:
        said = b""
    if said != RELEASE:
        for pid in process_tree(worker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def process_tree(root: int) -> list[int]:
    """`root` and every process below it, parents first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended while we read, or is no process
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, at = [root], 0
    while at < len(tree):
        tree.extend(children.get(tree[at], []))
        at += 1
    return tree


if __name__ == "__main__":
    main(sys.argv)
