"""A watchdog process that removes a run's containers and networks if the harness dies.

The harness starts `python -m harness.targets.docker.reaper RUN_ID` with a pipe on its
stdin and never writes to it. However the harness ends (return, exception, Ctrl-C,
SIGKILL, the machine's OOM killer), the kernel closes its end of the pipe; the reaper then
reads end-of-file and removes everything labelled `starquake=RUN_ID`. When the harness
tore down itself that finds nothing. This is testcontainers' Ryuk, without a container:
the reaper runs on the host, in a session of its own so a Ctrl-C in the terminal does not
reach it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

from harness.targets.docker.engine import connect
from harness.targets.docker.resources import TeardownIncomplete, remove_run

# A create call in flight when the harness died may complete after the first sweep.
SECOND_SWEEP_AFTER_S = 2.0


class Reaper:
    """The watchdog of one run; `release()` ends it once the run was torn down."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._process = subprocess.Popen(
            [sys.executable, "-m", "harness.targets.docker.reaper", run_id],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)

    def release(self, timeout: float = 30.0) -> None:
        """Close the pipe and wait for the reaper's (empty, by now) sweep to finish."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        # If it takes longer, leave it running: it only removes what carries this run's label.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout)


def main(argv: list[str]) -> int:
    (run_id,) = argv
    sys.stdin.buffer.read()  # returns when the harness's end of the pipe closes
    client = connect()
    for sweep in range(2):
        try:
            removed = remove_run(client, run_id)
        except TeardownIncomplete as exc:
            print(f"starquake reaper: {exc}", file=sys.stderr)
            return 1
        if removed.containers or removed.networks:
            print(f"starquake reaper: removed {removed.containers} containers and "
                  f"{removed.networks} networks of run {run_id}", file=sys.stderr)
        if sweep == 0:
            time.sleep(SECOND_SWEEP_AFTER_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
