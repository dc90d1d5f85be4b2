"""A watchdog that ends the local processes a harness started if the harness dies first.

Local nodes run in sessions of their own (so that a Ctrl-C reaches only the harness, which
stops them in order); the flip side is that a harness killed outright (SIGKILL, the OOM
killer, a crashed interpreter) would leave brokers, bookies and ZooKeeper servers running.
The first `LocalProcess` a harness starts also starts `python -m
harness.targets.local.process_reaper` with a pipe on its stdin, and tells it each process
it starts (`+PID`) and each it has reaped itself (`-PID`). When the pipe reaches end-of-
file (the harness is gone, however it ended) the reaper kills the process group of every
pid still listed, but only if that pid still names the process the harness started: its
start time in /proc must match the one read when the pid was announced, so a pid reused by
an unrelated process is left alone. A harness that stopped everything itself leaves the
list empty, and the reaper just exits.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from typing import IO


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or
    None when no such process exists."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count after it.
    return text[text.rindex(")") + 2:].split()[19]


class _Lifeline:
    """The harness's end of the pipe to its reaper, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._owner = 0

    def _send(self, line: str) -> None:
        with self._lock:
            if self._pipe is None or self._owner != os.getpid():
                # A forked child must not write into its parent's reaper: it gets its own.
                reaper = subprocess.Popen(
                    [sys.executable, "-m", "harness.targets.local.process_reaper"],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
                self._pipe, self._owner = reaper.stdin, os.getpid()
                atexit.register(self._close)
            assert self._pipe is not None
            try:
                self._pipe.write(f"{line}\n".encode())
                self._pipe.flush()
            except BrokenPipeError:
                self._pipe = None  # the reaper died; the next line starts another

    def _close(self) -> None:
        with self._lock:
            if self._pipe is not None and self._owner == os.getpid():
                self._pipe.close()
                self._pipe = None

    def watch(self, pid: int) -> None:
        self._send(f"+{pid}")

    def forget(self, pid: int) -> None:
        self._send(f"-{pid}")


LIFELINE = _Lifeline()
"""The one lifeline of this harness process; `LocalProcess` reports to it."""


def main() -> int:
    watched: dict[int, str] = {}
    for raw in sys.stdin.buffer:  # ends when the harness's end of the pipe closes
        line = raw.decode().strip()
        if line.startswith("+"):
            pid = int(line[1:])
            started = start_time(pid)
            if started is not None:
                watched[pid] = started
        elif line.startswith("-"):
            watched.pop(int(line[1:]), None)
    for pid, started in watched.items():
        if start_time(pid) == started:
            for signum in (signal.SIGCONT, signal.SIGKILL):  # a paused one must die too
                try:
                    os.killpg(pid, signum)
                except ProcessLookupError:
                    break
            print(f"starquake process reaper: killed process group {pid}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
