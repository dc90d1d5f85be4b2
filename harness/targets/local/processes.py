"""One local process of the system under test, with the controls a nemesis needs.

Each process runs in a session of its own (a Ctrl-C in the terminal reaches the harness,
which then stops everything in order), writes stdout and stderr to one log file that a
restart appends to, and is only ever signalled by the pid this module started. Every
process started here is announced to the harness's process reaper (process_reaper.py),
which kills it should the harness die without stopping it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.targets.local.process_reaper import LIFELINE
from harness.waits import wait_for

log = logging.getLogger(__name__)


class LocalProcess:
    def __init__(self, name: str, command: Sequence[str], log_path: Path,
                 cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        self._cwd = cwd
        self._env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._watched = False
        """Whether the reaper still holds the pid (until this module has reaped it)."""

    @property
    def pid(self) -> int | None:
        """The running process's pid; None once it has exited (or before it started)."""
        if self._process is None or self._reaped() is not None:
            return None
        return self._process.pid

    @property
    def running(self) -> bool:
        """True while the process exists, paused or not."""
        return self.pid is not None

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._reaped()

    def _reaped(self) -> int | None:
        """Poll the process; once it has exited, tell the reaper its pid is free."""
        assert self._process is not None
        code = self._process.poll()
        if code is not None and self._watched:
            self._watched = False
            LIFELINE.forget(self._process.pid)
        return code

    def start(self) -> None:
        if self.running:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, cwd=self._cwd, env=self._env,
                start_new_session=True)
        LIFELINE.watch(self._process.pid)
        self._watched = True
        log.info("%s started: pid %d, log %s", self.name, self._process.pid, self.log_path)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (with SIGCONT, so a paused process can act on it), SIGKILL after
        `timeout`; the process is reaped either way."""
        if self._process is None or not self.running:
            return
        self._signal(signal.SIGTERM)
        self._signal(signal.SIGCONT)
        try:
            self._process.wait(timeout)
            self._reaped()
        except subprocess.TimeoutExpired:
            log.warning("%s ignored SIGTERM for %.0f s; killing it", self.name, timeout)
            self.kill()

    def kill(self) -> None:
        """Crash it (SIGKILL) and reap it."""
        if self._process is None or not self.running:
            return
        self._signal(signal.SIGKILL)
        self._process.wait()
        self._reaped()

    def pause(self) -> None:
        """SIGSTOP: sockets stay open, nothing answers (a long GC pause, a hung host)."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit on its own; its exit code."""
        assert self._process is not None
        code = self._process.wait(timeout)
        self._reaped()
        return code

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _signal(self, signum: signal.Signals) -> None:
        if self._process is not None and self.running:
            os.kill(self._process.pid, signum)


def wait_serving(process: LocalProcess, serving: Callable[[], bool], timeout: float,
                 error: Callable[[str], Exception]) -> None:
    """Return once `serving()` says yes. A process that exits or stays silent past
    `timeout` raises `error` with the end of its log: what a user needs to see why a node
    did not come up."""
    def failed(how: str) -> Exception:
        code = f" with {process.returncode}" if how == "exited" else ""
        return error(f"{process.name} {how}{code}; end of {process.log_path}:\n"
                     f"{process.log_tail()}")

    wait_for(serving, lambda: process.running, timeout, failed)
