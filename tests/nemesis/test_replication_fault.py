"""`unlink-replication` through the admin REST API: one direction of one namespace's
replication goes and comes back, the lists read before they are written; and the final
heal ends one still on (a run cut short, or one lasting past the load), since no network
or process repair would."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.target import Node, TargetCluster
from history.writer import HistoryWriter
from nemesis.faults import FAULTS, replication
from nemesis.faults.base import FaultContext, FaultPlanError, Surface
from nemesis.process import ProcessFaults
from nemesis.runner import NemesisRunner
from nemesis.schedule import FaultStep, NemesisSettings, Schedule, TimedFault, build_schedule

TOPIC = "persistent://starquake/geo/t"
PATH = "/admin/v2/namespaces/starquake/geo/replication"


class Regions:
    """Clusters x, y, z, one broker each, with no network control."""

    def __init__(self) -> None:
        self.nodes = tuple(Node(f"{c}-broker1", "broker", c, f"10.0.0.{n}")
                           for n, c in enumerate("xyz"))
        self.clusters = tuple(TargetCluster(n.cluster, (), (f"http://{n.cluster}:8080",), "",
                                            (n,)) for n in self.nodes)
        self.network = None


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Every cluster lists all three for the namespace; returns the requests made."""
    lists = {c: ["x", "y", "z"] for c in "xyz"}
    calls: list[tuple[str, str, Any]] = []

    def request(base_url: str, method: str, path: str, body: Any = None) -> Any:
        assert path == PATH
        cluster = base_url.split("//")[1].split(":")[0]
        calls.append((cluster, method, body))
        if method == "POST":
            lists[cluster] = body
            return None
        return list(lists[cluster])

    monkeypatch.setattr(replication, "admin_request", request)
    return calls


def _context() -> FaultContext:
    return FaultContext(Regions(), ProcessFaults(), None, TOPIC)


def test_one_cluster_stops_replicating_to_another_and_starts_again(
        admin: list[tuple[str, str, Any]]) -> None:
    fault = FAULTS["unlink-replication"]
    event = fault.inject(_context(), ("y", "x"), random.Random(1))
    assert admin == [("y", "GET", None), ("y", "POST", ["y", "z"])]
    assert (event.f, event.value, event.targets) == ("unlink-replication", "y -> x", ("y", "x"))
    admin.clear()
    ended = fault.end(_context(), ("y", "x"))
    assert ended is not None and ended.f == "relink-replication"
    assert admin == [("y", "GET", None), ("y", "POST", ["y", "z", "x"])]


def test_without_targets_every_other_cluster_stops_replicating_to_the_first(
        admin: list[tuple[str, str, Any]]) -> None:
    event = FAULTS["unlink-replication"].inject(_context(), (), random.Random(1))
    assert [call for call in admin if call[1] == "POST"] == [("y", "POST", ["y", "z"]),
                                                              ("z", "POST", ["y", "z"])]
    assert event.detail == {"replication_clusters": {"y": ["y", "z"], "z": ["y", "z"]},
                            "receiver": "x"}


def test_the_final_heal_ends_an_unlink_still_on(admin: list[tuple[str, str, Any]],
                                               tmp_path: Path) -> None:
    step = FaultStep(0.0, "unlink-replication", 30.0, ("y", "x"), 1)  # past the heal
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        runner = NemesisRunner(Schedule((step,), 0.05), Regions(), history, TOPIC)
        runner.run(time.monotonic(), threading.Event())
    ops = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [(e["type"], e["f"]) for e in ops] == [
        ("invoke", "unlink-replication"), ("ok", "unlink-replication"),
        ("invoke", "relink-replication"), ("ok", "relink-replication"),
        ("invoke", "heal"), ("ok", "heal")]
    assert admin[-1] == ("y", "POST", ["y", "z", "x"])


def test_its_targets_are_two_distinct_clusters_or_none() -> None:
    settings = NemesisSettings("timeline", timeline=(
        TimedFault(1.0, "unlink-replication", 1.0, ("x", "x")),))
    with pytest.raises(FaultPlanError, match="unlink-replication takes two clusters"):
        build_schedule(settings, Surface(Regions().nodes), 1, 10.0, "t.toml")


def test_clusters_sharing_one_list_of_replication_clusters_refuse_it() -> None:
    settings = NemesisSettings("timeline", timeline=(
        TimedFault(1.0, "unlink-replication", 1.0, ("x", "y")),))
    shared = Surface(Regions().nodes, shared_replication_list=True)
    with pytest.raises(FaultPlanError, match=r"^t.toml: .*share one list of replication "
                                             r"clusters .* deletes the namespace's topics"):
        build_schedule(settings, shared, 1, 10.0, "t.toml")
