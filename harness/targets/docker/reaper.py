"""A watchdog process that removes a run's containers and networks if the harness dies.

The harness starts `python -m harness.targets.docker.reaper RUN_ID` with a pipe on its
stdin and never writes to it. However the harness ends (return, exception, Ctrl-C,
SIGKILL, the machine's OOM killer), the kernel closes its end of the pipe; the reaper then
reads end-of-file and removes everything labelled `starquake=RUN_ID`, first saving the
nodes' logs to the run directory when it was given one (`--logs RUN_DIR`): a harness
killed outright cannot save them itself. When the harness tore down itself that finds
nothing. This is testcontainers' Ryuk, without a container:
the reaper runs on the host, in a session of its own so a Ctrl-C in the terminal does not
reach it.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from pathlib import Path

from docker.errors import DockerException

from harness.targets.docker.engine import connect
from harness.targets.docker.resources import TeardownIncomplete, remove_run, save_logs

# A create call in flight when the harness died may complete after the first sweep.
SECOND_SWEEP_AFTER_S = 2.0


class Reaper:
    """The watchdog of one run; `release()` ends it once the run was torn down."""

    def __init__(self, run_id: str, run_dir: Path | None = None) -> None:
        self.run_id = run_id
        self._process = subprocess.Popen(
            [sys.executable, "-m", "harness.targets.docker.reaper", run_id,
             *(["--logs", str(run_dir)] if run_dir is not None else [])],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)

    def release(self, timeout: float = 30.0) -> None:
        """Close the pipe and wait for the reaper's (empty, by now) sweep to finish."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        # If it takes longer, leave it running: it only removes what carries this run's label.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.targets.docker.reaper")
    parser.add_argument("run_id")
    parser.add_argument("--logs", type=Path, metavar="RUN_DIR",
                        help="save the nodes' logs to RUN_DIR/logs before removing them")
    args = parser.parse_args(argv)
    run_id = args.run_id
    sys.stdin.buffer.read()  # returns when the harness's end of the pipe closes
    client = connect()
    if args.logs is not None:  # nothing is left to save when the harness tore down
        try:
            save_logs(client, run_id, args.logs)
        except (DockerException, OSError) as exc:
            print(f"starquake reaper: logs of run {run_id} not saved: {exc}", file=sys.stderr)
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
