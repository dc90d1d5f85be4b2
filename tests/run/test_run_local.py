"""`starquake run` end to end on local processes: Ctrl-C tears everything down and keeps
the history; after SIGKILL no node runs on and the nodes' logs are in the run directory.
From the short mutants suite (tests/run/conftest.py): consumers crashing with messages
out catch `closed-consumer-keeps-unacked`, and consumers negatively acknowledging some
catch `nack-not-redelivered`, both in one run; consumers committing cumulatively catch
`cumulative-ack-through-dispatched`, and a deduplicating topic whose owner is killed with
sends in flight at a frozen bookie catches `dedup-state-lost-on-owner-change`. (A valid
run under broker kills, its files and its replay are in test_smoke_suite.py.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tests.run.suite_runs import SuiteRuns

REPO = Path(__file__).resolve().parents[2]
STARQUAKE = [sys.executable, "-m", "starquake"]

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def _events(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


def _never_received(events: list[dict], subscription: str) -> set[str]:
    """The acknowledged sends whose value `subscription` never received: what `lost` must
    count there once the drain completed (a checker's examples show only the first few)."""
    sent = {e["value"] for e in events if e["f"] == "send" and e["type"] == "ok"}
    return sent - {e["value"] for e in events
                   if e["f"] == "recv" and e["subscription"] == subscription}


def _left_by_crashes(events: list[dict]) -> dict[str, set[str]]:
    """Per crashed consumer (one a `subscribe` `replaces`), the values it received and
    never acknowledged: what the broker owed the subscription again."""
    crashed = {json.loads(e["detail"]).get("replaces") for e in events
               if e["f"] == "subscribe" and e["type"] == "ok"} - {None}
    left: dict[str, set[str]] = {name: set() for name in crashed}
    for e in events:
        if e.get("consumer") in left and e["f"] in ("recv", "ack"):
            values = left[e["consumer"]]
            if e["f"] == "recv":
                values.add(e["value"])
            else:
                values.discard(e["value"])
    return left


def test_messages_owed_again_never_come_under_the_consumer_mutants(
        mutants_suite: SuiteRuns) -> None:
    """Shared consumers lag, negatively acknowledge one delivery in ten and crash every
    ~3 s with messages they never acknowledged. Under `nack-not-redelivered` no consumer
    gets the negatively acknowledged ones again, under `closed-consumer-keeps-unacked` no
    consumer gets the crashed ones' again, and after the load the idle consumers face a
    backlog of both that does not move."""
    run_dir = mutants_suite.run("topic-consumers-mutants")
    events = _events(run_dir)
    live = [e for e in events if e.get("subscription") == "live"]
    received = Counter(e["value"] for e in live if e["f"] == "recv")
    owed = set(received) - {e["value"] for e in live if e["f"] == "ack"}
    left = _left_by_crashes(events)
    withheld = set().union(*left.values())
    nacked = owed - withheld
    assert len(left) >= 2 and withheld, left
    assert len(nacked) >= 10, nacked
    assert {received[value] for value in owed} == {1}, "delivered again"
    results = json.loads((run_dir / "results.json").read_text())
    assert [name for name, result in results["checkers"].items()
            if result["valid"] is False] == ["stalled-subscription"]
    example = results["checkers"]["stalled-subscription"]["examples"][0]
    # The backlog also holds what a crashed consumer had been sent but never took.
    assert example["subscription"] == "live" and example["backlog"] >= len(owed)


def _invalid(run_dir: Path) -> tuple[list[str], dict]:
    """The checkers that found anomalies, and every checker's result."""
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    return [name for name, result in checkers.items() if result["valid"] is False], checkers


def test_a_cumulative_ack_past_its_message_loses_what_a_crashed_consumer_held(
        mutants_suite: SuiteRuns) -> None:
    """Failover consumers fall behind, commit cumulatively every fifth message and crash
    every ~3 s. Under `cumulative-ack-through-dispatched` each commit also acknowledges
    what the broker had sent its consumer beyond the message it names, so what a crashed
    consumer held unread never comes to its successor: lost in the live subscription,
    though stored (the late subscription reads every value)."""
    run_dir = mutants_suite.run("topic-cumulative-ack-through-dispatched")
    events = _events(run_dir)
    acks = [e for e in events
            if e["f"] == "ack" and e["type"] == "invoke" and e["subscription"] == "live"]
    assert acks and all(json.loads(e["detail"]) == {"cumulative": True} for e in acks)
    invalid, checkers = _invalid(run_dir)
    assert invalid == ["lost"]
    lost = _never_received(events, "live")
    assert lost and checkers["lost"]["count"] == len(lost)
    assert not _never_received(events, "late")


def test_a_resend_a_new_owner_stores_again_is_caught_where_the_run_deduplicates(
        mutants_suite: SuiteRuns) -> None:
    """The topic deduplicates, and four times its owner is killed while the bookie is
    frozen: the bookie stores the sends in flight after the owner is gone. Under
    `dedup-state-lost-on-owner-change` the next owner stores again what the client
    resends: one value at two stored positions, never at the -1:-1 a deduplicating broker
    answers a dropped resend with."""
    run_dir = mutants_suite.run("topic-dedup-state-lost-on-owner-change")
    events = _events(run_dir)
    assert events[0]["f"] == "meta" and json.loads(events[0]["detail"])["deduplication"]
    invalid, checkers = _invalid(run_dir)
    assert invalid == ["multi-position"]
    examples = checkers["multi-position"]["examples"]
    assert examples and all(
        len(set(e["positions"])) == 2 and not any(p.startswith("-1") for p in e["positions"])
        for e in examples)


def assert_replayed(first: list[dict], second: list[dict]) -> None:
    """Two runs of one seed: the same faults on the same nodes in the same order, the same
    subscriptions, and each producer's sends the same messages with the same keys in the
    same order (how many it got through in the time is timing's business)."""
    def faults(events: list[dict]) -> list[tuple[str, list[str]]]:
        return [(e["f"], json.loads(e["detail"])["targets"]) for e in events
                if e["process"] == "nemesis" and e["type"] == "invoke"]

    def sends(events: list[dict]) -> dict[str, list[tuple[str, str]]]:
        """By producer worker: its message ids are `w<worker>-<n>`, whatever process ids
        it recorded under (a send that timed out retires one)."""
        by_worker: dict[str, list[tuple[str, str]]] = {}
        for e in events:
            if e["f"] == "send" and e["type"] == "invoke":
                worker = e["value"].split("-")[0]
                by_worker.setdefault(worker, []).append((e["value"], e["key"]))
        return by_worker

    def subscriptions(events: list[dict]) -> set[str]:
        return {e["subscription"] for e in events if e["f"] == "subscribe"}

    assert faults(first) == faults(second) and any(f == "kill" for f, _ in faults(first))
    assert subscriptions(first) == subscriptions(second)
    first_sends, second_sends = sends(first), sends(second)
    assert first_sends.keys() == second_sends.keys()
    for worker, mine in first_sends.items():
        theirs = second_sends[worker]
        common = min(len(mine), len(theirs))
        assert common > 100 and mine[:common] == theirs[:common], worker


def _nodes_running(data_dirs: set[Path]) -> bool:
    """Whether any process's command line names one of the clusters' data directories."""
    names = [path.name.encode() for path in data_dirs]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if any(name in command for name in names):
                return True
    return False


WITH_DEFAULT_SIGINT = [
    sys.executable, "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'starquake', *sys.argv[1:]])"]
"""`starquake`, started with SIGINT at its default, as a terminal's foreground job has it. A
process started with SIGINT ignored keeps it ignored, and so does a Python harness (rightly:
that is how a shell runs a background job). A pytest-xdist worker was seen with SIGINT
ignored after earlier tests (/proc/PID/status, SigIgn), and the run it started then
ignored this test's Ctrl-C and ran to the end."""


def _interrupted_run(runs: Path, signum: signal.Signals) -> tuple[int, str, set[Path]]:
    """A local run sent `signum` 2 s into its load: its exit status, its stderr, and the
    data directories of the clusters it started. The run gets a temporary directory of
    its own, so that the clusters of other tests running meanwhile are not taken for its."""
    temp = runs / "tmp"
    temp.mkdir()
    harness = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, "run", str(REPO / "scenarios/smoke/topic-kill.toml"), "--seed", "3",
         "--backend", "local", "--runs-dir", str(runs)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(temp)})
    try:
        assert harness.stdout is not None
        deadline = time.monotonic() + 120
        read: list[str] = []
        for line in harness.stdout:  # ends when the harness exits
            read.append(line)
            if line.startswith("load for") or time.monotonic() > deadline:
                break
        ours = set(temp.glob("starquake-run-*"))
        time.sleep(2)
        # A signal to a harness that has already ended would fail the caller's assertions
        # with nothing to go on; say instead how far the run got.
        assert harness.poll() is None, (
            f"the run ended (exit {harness.returncode}) before it could be sent {signum.name}; "
            f"its output: {''.join(read)}{harness.stdout.read()}")
        harness.send_signal(signum)
        _, stderr = harness.communicate(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    return harness.returncode, stderr, ours


def test_ctrl_c_tears_down_and_keeps_the_history(tmp_path: Path) -> None:
    returncode, stderr, ours = _interrupted_run(tmp_path, signal.SIGINT)
    assert returncode == 130, stderr
    message = [line for line in stderr.splitlines() if line.startswith("starquake:")]
    assert len(message) == 1 and "run interrupted" in message[0]
    (run_dir,) = (tmp_path / "topic-kill").iterdir()
    assert (tmp_path / "latest").resolve() == run_dir.resolve()  # however the run ended
    events = _events(run_dir)
    assert events[0]["f"] == "meta" and any(e["f"] == "send" for e in events)
    log = run_dir / "logs" / "a-broker1.log"
    assert log.is_file() and not log.is_symlink()
    assert ours and not _nodes_running(ours)
    assert not any(path.exists() for path in ours)


def test_a_sigkilled_run_leaves_its_nodes_logs_and_no_node(tmp_path: Path) -> None:
    """Nothing of the harness runs after SIGKILL: the process reaper ends its nodes, and
    the run directory's logs, linked there from the start, lead to what the nodes wrote."""
    returncode, stderr, ours = _interrupted_run(tmp_path, signal.SIGKILL)
    try:
        assert returncode == -signal.SIGKILL, stderr
        (run_dir,) = (tmp_path / "topic-kill").iterdir()
        assert (tmp_path / "latest").resolve() == run_dir.resolve()
        logs = {path.name: path for path in (run_dir / "logs").iterdir()}
        assert {"a-broker1.log", "a-bookie1.log", "a-zk1.log"} <= logs.keys()
        assert "broker serving" in logs["a-broker1.log"].read_text()
        deadline = time.monotonic() + 30
        while _nodes_running(ours) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ours and not _nodes_running(ours)
    finally:
        for path in ours:  # what only the harness's own teardown would have removed
            shutil.rmtree(path, ignore_errors=True)
