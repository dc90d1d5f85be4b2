"""The `starquake check-worker` child that judges a command's runs one after another.

A run's verdict comes from `starquake check` in a process of its own, so the harness never
shares its process with a JVM. Starting that process for every run cost a suite about
15 s per run (a JVM, a Spark session, Spark's code compiled again); one worker kept for
the whole command pays that once, and each later run is judged in 2 to 3 s.

The worker's output for a run (the checkers' lines, Spark's warnings, a traceback) goes to
that run's `check.log`, as a `starquake check` of its own would write it.

Each worker has a lifeline (starquake/run/lifeline.py): should the command die without
closing it (SIGKILL), the lifeline kills the worker and its Spark JVM within moments,
where the worker would otherwise judge on for 20 s or more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Protocol

from checkers.cli import WORKER_DONE
from checkers.spark_settings import SparkSettings
from history.errors import ENVIRONMENT
from starquake.run import lifeline

STOP_WAIT_S = 30
"""How long a worker told to stop may take to end its Spark session before it is killed."""


class Judge(Protocol):
    """What a run needs of the worker that judges it (a `CheckWorker`, or a lane's way to
    the command's one worker: starquake/run/lanes.py)."""

    def judge(self, run_dir: Path) -> int:
        """The run's `starquake check` exit code."""


class CheckWorker:
    """Judges run directories in one `starquake check-worker` process, started at the
    first run and again after one that ended it."""

    def __init__(self, spark: SparkSettings) -> None:
        self._spark = spark
        self._process: subprocess.Popen[str] | None = None
        self._lifeline: tuple[subprocess.Popen[bytes], int] | None = None
        """The running worker's lifeline process and the write end of its pipe."""

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "starquake", "check-worker", *self._spark.check_args()]

    def judge(self, run_dir: Path) -> int:
        """The run's `starquake check` exit code: 0 valid, 1 invalid, 2 unknown, 3 bad
        input, else the code the worker ended with (its reason in `check.log`)."""
        with (run_dir / "check.log").open("w") as log:
            worker = self._running()
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write(f"{run_dir}\n")
            worker.stdin.flush()
            code = _copy_until_done(worker.stdout, log)
            if code is not None:
                return code
            self._process = None
            ended = worker.wait()
            self._release()
            return ended if ended not in (0, 1, 2) else ENVIRONMENT

    def _running(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is not None:
            self.close()  # it ended between runs
        if self._process is None:
            self._process = subprocess.Popen(
                self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, bufsize=1)
            self._lifeline = _lifeline(self._process.pid)
        return self._process

    def close(self) -> None:
        """End the worker: it stops its session when its input ends; killed if it hangs."""
        worker, self._process = self._process, None
        if worker is None:
            return
        assert worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.close()
        except BrokenPipeError:  # it has ended already
            pass
        try:
            worker.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        worker.stdout.close()
        self._release()

    def _release(self) -> None:
        """Tell the lifeline the worker was ended here, and let it go."""
        if self._lifeline is None:
            return
        (watcher, write_end), self._lifeline = self._lifeline, None
        try:
            os.write(write_end, lifeline.RELEASE)
        except BrokenPipeError:  # it has ended already
            pass
        os.close(write_end)
        watcher.wait()

    def __enter__(self) -> CheckWorker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def _lifeline(worker: int) -> tuple[subprocess.Popen[bytes], int]:
    """Start the lifeline of the worker `worker`; the pipe's write end stays here only
    (os.pipe's ends are not inherited, and the lifeline alone is passed the read end)."""
    read_end, write_end = os.pipe()
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", lifeline.__file__, str(read_end), str(worker)],
            pass_fds=(read_end,), stdin=subprocess.DEVNULL)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return watcher, write_end


def _copy_until_done(output: IO[str], log: IO[str]) -> int | None:
    """Copy the worker's lines into the run's log up to the line that gives the run's exit
    code; None when the worker ended first."""
    for line in output:
        if line.startswith(WORKER_DONE):
            return int(line[len(WORKER_DONE):])
        log.write(line)
    return None
