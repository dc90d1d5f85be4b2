"""A check worker does not outlive the command that started it: SIGKILL the command while
the worker checks, and the worker and its Spark JVM are gone within 2 s (they used to
judge on for 20 s or more). A worker closed in the ordinary way is left to stop itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkers.spark_settings import SparkSettings
from checkers.synthetic import SyntheticSpec, write_jsonl
from history.errors import BAD_INPUT
from starquake.run import lifeline
from starquake.run.check_worker import CheckWorker

REPO = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 2.0
PARENT = """
import sys
from pathlib import Path
from checkers.spark_settings import SparkSettings
from starquake.run.check_worker import CheckWorker
CheckWorker(SparkSettings()).judge(Path(sys.argv[1]))
"""


def _alive(pid: int) -> bool:
    """A process that has not ended (a zombie no one reaped yet has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _named(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _left_after(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _kill(pids: list[int]) -> None:
    """End what this test started and a failure left behind."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _worker_checking(parent: int, timeout: float) -> list[int]:
    """The worker under `parent` and its processes, once its JVM runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in lifeline.process_tree(parent):
            if "check-worker" in _named(pid):
                tree = lifeline.process_tree(pid)
                if any(Path(f"/proc/{p}/comm").exists()
                       and Path(f"/proc/{p}/comm").read_text().strip() == "java"
                       for p in tree):
                    return tree
        time.sleep(0.2)
    raise TimeoutError(f"no check worker with a JVM under {parent} within {timeout} s")


@pytest.mark.slow
@pytest.mark.spark
def test_a_killed_command_takes_its_check_worker_and_jvm_along(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(SyntheticSpec(messages=300, keys=4), run / "history.jsonl")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(run)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker: list[int] = []
    try:
        worker = _worker_checking(parent.pid, timeout=240)
        assert not (run / "results.json").exists(), "the check ended before the kill"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        left = _left_after(worker, GONE_WITHIN_S)
        assert left == [], f"alive {GONE_WITHIN_S} s after the command's SIGKILL: " + \
            "; ".join(f"{pid} {_named(pid)[:80]}" for pid in left)
    finally:
        parent.kill()
        parent.wait()
        _kill(worker)


def _watched(tmp_path: Path) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], int]:
    """A stand-in worker (a shell with a child of its own) and its lifeline."""
    worker = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    read_end, write_end = os.pipe()
    watcher = subprocess.Popen([sys.executable, "-I", "-S", lifeline.__file__, str(read_end),
                                str(worker.pid)], pass_fds=(read_end,))
    os.close(read_end)
    return worker, watcher, write_end


def test_a_lifeline_whose_pipe_ends_kills_the_worker_tree(tmp_path: Path) -> None:
    worker, watcher, write_end = _watched(tmp_path)
    time.sleep(0.3)  # the shell has started its sleep
    tree = lifeline.process_tree(worker.pid)
    try:
        assert len(tree) == 2
        os.close(write_end)  # what the command's death does
        assert _left_after(tree, GONE_WITHIN_S) == []
        assert watcher.wait(GONE_WITHIN_S) == 0
    finally:
        _kill(tree)
        worker.wait()


def test_a_released_lifeline_leaves_the_worker_alone(tmp_path: Path) -> None:
    worker, watcher, write_end = _watched(tmp_path)
    try:
        os.write(write_end, lifeline.RELEASE)
        os.close(write_end)
        assert watcher.wait(GONE_WITHIN_S) == 0
        assert worker.poll() is None
    finally:
        _kill(lifeline.process_tree(worker.pid))
        worker.wait()


def test_a_worker_closed_as_usual_ends_by_itself_and_releases_its_lifeline(
        tmp_path: Path) -> None:
    """Bad input is answered before any Spark session starts: no JVM needed."""
    run = tmp_path / "corrupt"
    run.mkdir()
    (run / "history.jsonl").write_text('{"index": 0, "process": "harness"\n{not json}\n')
    with CheckWorker(SparkSettings()) as checks:
        assert checks.judge(run) == BAD_INPUT
        worker, (watcher, _) = checks._process, checks._lifeline  # type: ignore[misc]
    assert worker is not None and worker.returncode == 0
    assert watcher.returncode == 0 and checks._lifeline is None
