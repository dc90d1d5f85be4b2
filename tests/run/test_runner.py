"""The nemesis runner records each fault as the history catalogue says (invoke, then ok
or info, targets in `detail`) and always ends by bringing every node back.

The nodes here are stand-ins that remember what was done to them: this tests the
runner's bookkeeping; tests/run/test_run_local.py runs it against real processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import orjson
import pytest

from harness.target import Node as TargetNode
from harness.target import TargetCluster
from history.writer import HistoryWriter
from nemesis.runner import NemesisRunner
from nemesis.schedule import FaultStep, Schedule


class Node:
    def __init__(self, name: str, calls: list[str], broken: bool = False) -> None:
        self.name = name
        self._calls = calls
        self._broken = broken

    def _do(self, what: str) -> None:
        if self._broken:
            raise OSError(f"{self.name} does not answer")
        self._calls.append(f"{what} {self.name}")

    def kill(self) -> None:
        self._do("kill")

    def start(self) -> None:
        self._do("start")

    def pause(self) -> None:
        self._do("pause")

    def resume(self) -> None:
        self._do("resume")


class Targets:
    """A Target of stand-in nodes: broker n serves `pulsar://10.0.0.n:6650`, and its admin
    API is at `admin_urls[n - 1]` (by default nowhere)."""

    network = None
    session_timeout_s = 4.0
    metadata_loss_shutdown_s = None

    def __init__(self, nodes: list[Node], admin_urls: tuple[str, ...] = ()) -> None:
        self._nodes = {n.name: n for n in nodes}
        brokers = [n.name for n in nodes if "-broker" in n.name]
        admin_urls = admin_urls or tuple("http://127.0.0.1:9" for _ in brokers)
        self.clusters = (TargetCluster(
            "a", tuple(f"pulsar://10.0.0.{n}:6650" for n in range(1, len(brokers) + 1)),
            admin_urls, None,
            tuple(TargetNode(n.name, "broker" if "-broker" in n.name else "bookie", "a",
                             n.name, frozenset({"kill", "pause"})) for n in nodes)),)

    def control(self, name: str) -> Node:
        return self._nodes[name]


HEALTH: dict[str, list[str]] = {}
"""Admin URL -> the answers its broker's health check gives in turn (the last one for
good); a broker not named answers healthy."""


@pytest.fixture(autouse=True)
def _health(monkeypatch: pytest.MonkeyPatch) -> None:
    def read(url: str) -> dict[str, object]:
        answers = HEALTH.get(url, ["healthy"])
        return {"answer": answers.pop(0) if len(answers) > 1 else answers[0]}

    HEALTH.clear()
    monkeypatch.setattr("nemesis.runner.read_health", read)
    monkeypatch.setattr("nemesis.runner.SETTLE_POLL_S", 0.01)
    monkeypatch.setattr("nemesis.runner.RESTART_GRACE_S", 0.02)


def _run(tmp_path: Path, steps: list[FaultStep], heal_at_s: float, nodes: list[Node]
         ) -> list[dict]:
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        runner = NemesisRunner(Schedule(tuple(steps), heal_at_s), Targets(nodes), history,
                               "persistent://public/default/t")
        runner.run(time.monotonic(), threading.Event())
    return [orjson.loads(line) for line in (tmp_path / "history.jsonl").read_bytes().splitlines()]


def test_faults_are_recorded_and_everything_is_back_at_the_end(tmp_path: Path) -> None:
    calls: list[str] = []
    nodes = [Node("a-broker1", calls), Node("a-broker2", calls), Node("a-bookie1", calls)]
    events = _run(tmp_path, [
        FaultStep(0.0, "pause", 0.05, ("a-broker1",), 1),
        FaultStep(0.1, "kill", 5.0, ("a-bookie1", "a-broker2"), 2),  # outlasts the run
    ], 0.2, nodes)
    # The pause may have ended a broker's session: the heal starts every broker again.
    assert calls == ["pause a-broker1", "resume a-broker1", "kill a-bookie1",
                     "kill a-broker2", "start a-bookie1", "start a-broker2", "start a-broker1"]
    assert [(e["type"], e["f"]) for e in events] == [
        ("invoke", "pause"), ("ok", "pause"), ("invoke", "resume"), ("ok", "resume"),
        ("invoke", "kill"), ("ok", "kill"), ("invoke", "heal"), ("ok", "heal"),
        ("invoke", "start"), ("ok", "start"), ("invoke", "start"), ("ok", "start")]
    assert {e["process"] for e in events} == {"nemesis"}
    kill_ok = events[5]
    assert orjson.loads(kill_ok["detail"])["targets"] == ["a-bookie1", "a-broker2"]
    assert events[6]["time"] >= 0.2e9  # the final heal waits for the end of the load phase


def test_a_broker_that_halts_after_the_final_heal_is_started_again(tmp_path: Path) -> None:
    """Seen on docker: every broker cut from ZooKeeper under `shutdown` was still shutting
    down when the heal started every broker (left alone, running), then exited; the drain
    found no broker. The heal now waits for every broker to answer healthy, starting again
    any that stops answering, as a supervisor would."""
    calls: list[str] = []
    HEALTH["http://127.0.0.1:9/2"] = ["unhealthy", "down", "down", "down", "down", "healthy"]
    nodes = [Node("a-broker1", calls), Node("a-broker2", calls)]
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        NemesisRunner(Schedule((FaultStep(0.0, "pause", 0.02, ("a-broker1",), 1),), 0.05),
                      Targets(nodes, ("http://127.0.0.1:9/1", "http://127.0.0.1:9/2")),
                      history, "t").run(time.monotonic(), threading.Event())
    events = [orjson.loads(line)
              for line in (tmp_path / "history.jsonl").read_bytes().splitlines()]
    assert calls.count("start a-broker2") >= 2 and calls.count("start a-broker1") == 1
    again = [e for e in events if e["f"] == "start" and e["type"] == "ok"][1:]
    assert again and all(orjson.loads(e["detail"])["targets"] == ["a-broker2"] for e in again)


def test_the_heal_waits_for_a_broker_that_never_recovers_no_longer_than_it_may_try(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that stays up unable to serve (a zombie, `zombie-broker`'s to judge) holds
    the drain back only for the time a broker may try before it gives up, and a margin."""
    monkeypatch.setattr("nemesis.runner.SETTLE_MARGIN_S", 0.2)
    monkeypatch.setattr(Targets, "session_timeout_s", 0.1)
    HEALTH["http://127.0.0.1:9"] = ["unhealthy"]
    started = time.monotonic()
    _run(tmp_path, [FaultStep(0.0, "pause", 0.02, ("a-broker1",), 1)], 0.05,
         [Node("a-broker1", [])])
    assert 0.3 <= time.monotonic() - started < 3


def test_after_faults_that_keep_sessions_only_what_they_broke_is_started(
        tmp_path: Path) -> None:
    """A kill ends no other broker's metadata session: unlike after the pause above, the
    heal starts the killed broker and no other."""
    calls: list[str] = []
    nodes = [Node("a-broker1", calls), Node("a-broker2", calls)]
    events = _run(tmp_path, [FaultStep(0.0, "kill", 5.0, ("a-broker2",), 1)], 0.05, nodes)
    assert calls == ["kill a-broker2", "start a-broker2"]
    assert [(e["type"], e["f"]) for e in events][-2:] == [("invoke", "start"), ("ok", "start")]


def test_a_fault_that_fails_is_recorded_as_info(tmp_path: Path) -> None:
    calls: list[str] = []
    events = _run(tmp_path, [FaultStep(0.0, "kill", 0.01, ("a-broker1",), 1)], 0.05,
                  [Node("a-broker1", calls, broken=True)])
    info = next(e for e in events if e["type"] == "info")
    assert info["f"] == "kill" and info["error"] == "OSError"
    assert "a-broker1 does not answer" in orjson.loads(info["detail"])["message"]


def test_a_stop_cuts_the_schedule_short_but_still_heals(tmp_path: Path) -> None:
    calls: list[str] = []
    stop = threading.Event()
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        runner = NemesisRunner(Schedule((FaultStep(0.0, "kill", 60, ("a-broker1",), 1),), 60),
                               Targets([Node("a-broker1", calls)]), history, "t")
        threading.Timer(0.2, stop.set).start()
        started = time.monotonic()
        runner.run(started, stop)
        assert time.monotonic() - started < 5
    assert calls == ["kill a-broker1", "start a-broker1"]


@contextmanager
def _admin_answering(path: str, answer: dict[str, str]) -> Iterator[str]:
    """An admin API at the yielded URL that answers GET `path` with `answer`, else 404."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == path
            body = orjson.dumps(answer if found else {})
            self.send_response(200 if found else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def _run_against(tmp_path: Path, step: FaultStep, admin: str, calls: list[str]) -> list[dict]:
    """`step` on two stand-in brokers, the first of which answers the admin API at
    `admin`."""
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        runner = NemesisRunner(
            Schedule((step,), 0.1),
            Targets([Node("a-broker1", calls), Node("a-broker2", calls)],
                    (admin, "http://127.0.0.1:9")),
            history, "persistent://public/default/t")
        runner.run(time.monotonic(), threading.Event())
    return [orjson.loads(line) for line in (tmp_path / "history.jsonl").read_bytes().splitlines()]


def test_the_controller_leader_is_the_broker_the_stats_name_when_the_fault_starts(
        tmp_path: Path) -> None:
    """`kill-controller-leader` asks the brokers' scalable-topic stats who leads, kills
    that broker (recorded as history.md's `kill-leader`) and starts it again."""
    calls: list[str] = []
    with _admin_answering("/admin/v2/scalable/public/default/t/stats",
                          {"controllerBrokerUrl": "pulsar://10.0.0.2:6650"}) as admin:
        events = _run_against(tmp_path, FaultStep(0.0, "kill-controller-leader", 0.05,
                                                  ("controller-leader",), 1), admin, calls)
    assert calls == ["kill a-broker2", "start a-broker2"]
    assert [(e["type"], e["f"], e["value"]) for e in events[:2]] == [
        ("invoke", "kill-leader", "a-broker2"), ("ok", "kill-leader", "a-broker2")]


def test_a_node_a_step_names_twice_is_struck_once(tmp_path: Path) -> None:
    """Several nodes at once (`nodes_at_once`) may name `owner` and the broker that owns
    the topic: it is killed once, and started once."""
    calls: list[str] = []
    with _admin_answering("/lookup/v2/topic/persistent/public/default/t",
                          {"nativeUrl": "pulsar://10.0.0.2:6650"}) as admin:
        events = _run_against(tmp_path, FaultStep(0.0, "kill", 0.05, ("owner", "a-broker2"), 1),
                              admin, calls)
    assert calls == ["kill a-broker2", "start a-broker2"]
    kill = next(e for e in events if e["f"] == "kill" and e["type"] == "ok")
    assert orjson.loads(kill["detail"])["targets"] == ["a-broker2"]


@pytest.mark.parametrize("aimed_at", ["owner", "a-broker2"])
def test_a_fault_inside_a_background_fault_never_strikes_the_node_it_holds(
        tmp_path: Path, aimed_at: str) -> None:
    """The lookup still names the broker the background killed (its session not yet
    over), or the background's `owner` turned out to be the broker a step names: a kill
    inside the background strikes the other broker, so its start does not end the
    background early."""
    calls: list[str] = []
    background = FaultStep(0.0, "kill", 0.3, ("owner",), 1, beneath=True)
    inside = FaultStep(0.05, "kill", 0.05, (aimed_at,), 2)
    with (_admin_answering("/lookup/v2/topic/persistent/public/default/t",
                           {"nativeUrl": "pulsar://10.0.0.2:6650"}) as admin,
          HistoryWriter(tmp_path / "history.jsonl") as history):
        NemesisRunner(Schedule((background, inside), 0.4),
                      Targets([Node("a-broker1", calls), Node("a-broker2", calls)],
                              (admin, "http://127.0.0.1:9")),
                      history, "persistent://public/default/t"
                      ).run(time.monotonic(), threading.Event())
    assert calls == ["kill a-broker2", "kill a-broker1", "start a-broker1", "start a-broker2"]
