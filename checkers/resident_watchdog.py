"""The watchdog beside a resident Spark server: `python -m checkers.resident_watchdog HOME
PID IDLE_S`, started with the server by `checkers.resident`.

It stops server PID once no command has used it for IDLE_S seconds and none holds it in
use (a check longer than the timeout keeps it), and leaves when the server has gone,
however it went. The idle decision is taken under the start-up lock, so a command that is
about to use the server either sees it stopped and starts another, or holds it first.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from checkers.resident_state import (
    forget_state,
    idle_for_s,
    in_use,
    is_server,
    start_lock,
    stop_process,
    touch,
)


def watch(home: Path, pid: int, idle_s: float) -> str:
    """Watch until the server is gone; why it went."""
    poll_s = max(0.5, min(30.0, idle_s / 10))
    while True:
        time.sleep(poll_s)
        if not is_server(pid, home):
            forget_state(home, pid)
            return "the server exited"
        with start_lock(home):
            if in_use(home):
                touch(home)
            elif idle_for_s(home) >= idle_s:
                stop_process(pid, lambda p: is_server(p, home))
                forget_state(home, pid)
                return f"stopped the server after {idle_s:.0f} s unused"


def main(argv: list[str]) -> int:
    home, pid, idle_s = Path(argv[0]), int(argv[1]), float(argv[2])
    reason = watch(home, pid, idle_s)
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} watchdog of server {pid}: {reason}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
