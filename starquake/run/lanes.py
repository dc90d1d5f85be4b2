"""Runs two at a time (`starquake explore --parallel 2`, `starquake detect --parallel 2`):
each lane a process of its own that runs the scenarios it is handed one after another, all
of them judged by the command's one check worker.

Why processes and not threads: a run keeps state that a process has once. The official
client takes one logger per process (harness/workloads/client_log.py), so two runs in one
process would write each other's client log; the credentials a run presents are the
process's; SIGTERM's handler can only be set by the main thread; rich allows one live
progress table per console. A lane is what a `starquake run` of each of its scenarios
would be, in a process started once (spawn: no thread of this one is copied into it).

Why one check worker: a worker's Spark session takes up to 3 GiB (docs/performance.md), and
judging takes 2 to 3 s of a run's minute, so the lanes ask this process, which judges their
runs in turn, rather than each starting one.

Each lane prints its run's lines prefixed by the scenario's name, so the two runs' lines
can be told apart. A lane is in a session of its own, as local nodes are: a Ctrl-C (or a
SIGTERM) reaches this process alone, which passes it on to each lane once, so that each
run under way tears down as an interrupted `starquake run` does; the command then ends
with the interrupt once both lanes have.
"""

from __future__ import annotations

import dataclasses
import io
import multiprocessing
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TextIO

from rich.console import Console

from harness.signals import sigterm_interrupts
from history.errors import ENVIRONMENT
from starquake.run.check_worker import CheckWorker, Judge
from starquake.run.pipeline import RunInterrupted, RunOptions
from starquake.run.suite import SuiteResult, judged_run

Expected = tuple[str, tuple[str, ...]]
"""A scenario's expected verdict and anomalies."""
RunOne = Callable[[RunOptions, Expected, Console, Judge], SuiteResult]
"""What a lane runs each file with (`judged_run`); module-level, as a lane is spawned."""

PARALLEL_MEMORY_GIB = {"apache-pulsar": 6.0}
"""Memory one run at a time needs, where two at once could exhaust a machine: Apache
Pulsar's geo runs start two clusters of some 1.9 GiB each under load
(docs/apache-pulsar.md), with room for their clients and the check worker's share. Our
reference implementation's nodes are small Python processes."""


def memory_problem(backend: str, parallel: int) -> str | None:
    """Why this machine should not deploy `parallel` of the backend's largest drawn
    topologies at once; None when it may."""
    needed = PARALLEL_MEMORY_GIB.get(backend, 0.0) * parallel
    available = available_memory_gib()
    if available is None or available >= needed:
        return None
    return (f"--parallel {parallel} with --backend {backend} needs about {needed:g} GiB of "
            f"available memory (two clusters of Apache Pulsar per geo run), this machine "
            f"has {available:.1f} GiB; run one at a time")


def available_memory_gib() -> float | None:
    """MemAvailable of /proc/meminfo; None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


@dataclass
class _Lane:
    process: BaseProcess
    conn: Connection
    running: int | None = None
    """The index of the file it runs; None while idle."""


def run_in_lanes(files: list[Path], expected: dict[Path, Expected], options: RunOptions,
                 console: Console, keep_going: Callable[[], bool], lanes: int,
                 run: RunOne = judged_run) -> Iterator[SuiteResult]:
    """Every file's result, in the files' order, each yielded once it and every earlier one
    have ended. `keep_going` is asked before each run is handed out; once it says no, no
    run starts. An error that is not a run's failure to finish ends the command once the
    other lane's run has ended, as it would end a suite run one at a time."""
    context = multiprocessing.get_context("spawn")
    started: list[_Lane] = []
    done: dict[int, SuiteResult] = {}
    errors: list[BaseException] = []
    queue = list(enumerate(files))
    shown = 0
    with CheckWorker(options.spark) as checks, sigterm_interrupts():
        try:
            started.extend(_start(context, options, run)
                           for _ in range(min(lanes, len(files))))
            handing_out = True
            while True:
                for lane in started:
                    if lane.running is None and handing_out and queue and not errors:
                        handing_out = keep_going()
                        if handing_out:
                            index, file = queue.pop(0)
                            lane.conn.send((index + 1, len(files), file, expected[file]))
                            lane.running = index
                busy = [lane for lane in started if lane.running is not None]
                if not busy:
                    break
                for conn in wait([lane.conn for lane in busy]):
                    lane = next(lane for lane in busy if lane.conn is conn)
                    if not _answer(lane, files, expected, checks.judge, done, errors, console):
                        started[started.index(lane)] = _start(context, options, run)
                while shown in done:
                    yield done.pop(shown)
                    shown += 1
        except KeyboardInterrupt:
            _interrupt(started)
            raise RunInterrupted("explore interrupted: each run under way was interrupted "
                                 "and torn down; the runs that ended are in their "
                                 "directories") from None
        finally:
            _stop(started)
    if errors:
        raise errors[0]


def _start(context: SpawnContext, options: RunOptions, run: RunOne) -> _Lane:
    ours, theirs = context.Pipe()
    process = context.Process(target=_lane, args=(theirs, options, run), name="explore-lane")
    process.start()
    theirs.close()  # so that the lane's end closing reads here as its death
    return _Lane(process, ours)


def _answer(lane: _Lane, files: list[Path], expected: dict[Path, Expected],
            judge: Callable[[Path], int], done: dict[int, SuiteResult],
            errors: list[BaseException], console: Console) -> bool:
    """Act on what `lane` said: judge its run, keep its result or error. False when the
    lane died without a word (killed, out of memory): that is its run's failure to
    finish, and the lane is to be replaced."""
    assert lane.running is not None
    try:
        kind, payload = lane.conn.recv()
    except EOFError:
        file = files[lane.running]
        lane.process.join()
        lane.conn.close()
        console.print(f"explore: the lane running {file} ended with exit code "
                      f"{lane.process.exitcode}", markup=False)
        done[lane.running] = SuiteResult(file, expected[file][0], ENVIRONMENT, None)
        return False
    if kind == "judge":
        lane.conn.send(judge(payload))
        return True
    if kind == "result":
        done[lane.running] = payload
    else:
        errors.append(payload)
    lane.running = None
    return True


def _interrupt(lanes: list[_Lane]) -> None:
    """Pass the interrupt on to every lane once, then wait for them: each run under way
    tears down before its lane ends (it asks for no judging: it was interrupted)."""
    for lane in lanes:
        if lane.process.is_alive() and lane.process.pid is not None:
            os.kill(lane.process.pid, signal.SIGINT)
    for lane in lanes:
        _join_ignoring_interrupts(lane.process)


def _stop(lanes: list[_Lane]) -> None:
    """Tell every idle lane there is nothing more (its input ends) and wait for it."""
    for lane in lanes:
        lane.conn.close()
    for lane in lanes:
        _join_ignoring_interrupts(lane.process)


def _join_ignoring_interrupts(process: BaseProcess) -> None:
    """Wait for `process`: a further Ctrl-C must not leave a lane tearing down unwatched."""
    while True:
        try:
            process.join()
            return
        except KeyboardInterrupt:
            continue


# --- the lane's side ------------------------------------------------------------------------


class _JudgedByCommand:
    """A `Judge` that asks the command's check worker, through the lane's pipe."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def judge(self, run_dir: Path) -> int:
        self._conn.send(("judge", run_dir))
        return int(self._conn.recv())


class PrefixedLines(io.StringIO):
    """A text stream that writes each whole line to `out` after `prefix`: what a lane's
    console prints through, so the two lanes' lines name their scenarios. Not a terminal,
    so a run's progress is its phase lines (starquake/run/progress.py)."""

    def __init__(self, out: TextIO, prefix: str) -> None:
        super().__init__()
        self._out = out
        self._prefix = prefix
        self._partial = ""

    def write(self, text: str) -> int:
        *lines, self._partial = (self._partial + text).split("\n")
        if lines:
            self._out.write("".join(f"{self._prefix}{line}\n" for line in lines))
            self._out.flush()
        return len(text)

    def flush(self) -> None:
        self._out.flush()


def _lane(conn: Connection, options: RunOptions, run: RunOne) -> None:
    """A lane's life: run each file handed to it until its input ends. The interrupt the
    command passes on is a SIGINT, which a process started in the background by a shell
    without job control (nohup, a CI runner) inherits ignored: the lane takes it again."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    judge = _JudgedByCommand(conn)
    try:
        while True:
            number, total, file, expected = conn.recv()
            console = Console(file=PrefixedLines(sys.stdout, f"[{file.stem}] "),
                              soft_wrap=True)
            console.print(f"suite: {number}/{total} {file}", markup=False)
            try:
                result = run(dataclasses.replace(options, scenario=file), expected,
                             console, judge)
            except BaseException as exc:  # anything else ends the command, as in one lane
                conn.send(("error", _sendable(exc)))
                return
            conn.send(("result", result))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        return  # the command has ended, or was interrupted while this lane waited


def _sendable(exc: BaseException) -> BaseException:
    """`exc` when it crosses the pipe whole (starquake's errors do), else a RuntimeError
    holding its traceback; a Ctrl-C is the run's interrupt."""
    if isinstance(exc, KeyboardInterrupt):
        return RunInterrupted("run interrupted")
    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError("".join(traceback.format_exception(exc)))
    return exc

