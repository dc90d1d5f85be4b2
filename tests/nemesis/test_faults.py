"""Fault kinds as units: the registry agrees with the history's catalogue of nemesis
operations, a fault a Target cannot take is refused by name, and `expire-session` uses
what a Target offers when it lacks our brokers' session debug endpoint."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable

import pytest

from harness.target import Capability, Node, TargetCluster
from history.faults import HEAL_OPS, NEMESIS_OPS
from nemesis.faults import FAULTS
from nemesis.faults.base import FaultContext, FaultPlanError, Surface
from nemesis.partition import Partitioner
from nemesis.process import ProcessFaults
from nemesis.schedule import NemesisSettings, TimedFault, build_schedule

TOPIC = "persistent://public/default/t"


def test_every_fault_records_an_operation_the_readers_know() -> None:
    for fault in FAULTS.values():
        assert fault.op in NEMESIS_OPS, fault.name
        assert fault.end_op is None or fault.end_op in HEAL_OPS, fault.name


class Control:
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self._calls = name, calls

    def kill(self) -> None:
        self._calls.append(f"kill {self.name}")

    def start(self) -> None:
        self._calls.append(f"start {self.name}")

    def pause(self) -> None:
        self._calls.append(f"pause {self.name}")

    def resume(self) -> None:
        self._calls.append(f"resume {self.name}")


class Network:
    def __init__(self, names: list[str], calls: list[str]) -> None:
        self.names, self._calls = names, calls

    def drop(self, node: str, sources: Iterable[str], to_port: int | None = None) -> None:
        self._calls.append(f"{node} drops {','.join(sorted(sources)) or 'nothing'}")

    def cut_clients(self, node: str, port: int) -> None:
        self._calls.append(f"{node} cuts its clients on {port}")


class ThirdParty:
    """A Target with no session debug endpoint: a broker and a metadata-store node."""

    session_timeout_s = 0.05

    def __init__(self, capabilities: frozenset[Capability], calls: list[str]) -> None:
        nodes = (Node("x-broker1", "broker", "x", "10.0.0.1", capabilities),
                 Node("x-zk1", "zookeeper", "x", "10.0.0.2", capabilities))
        self.clusters = (TargetCluster("x", ("pulsar://10.0.0.1:6650",),
                                       ("http://10.0.0.1:8080",), "10.0.0.2:2181", nodes),)
        self._calls = calls
        self.network = (Network([n.name for n in nodes], calls)
                        if "partition" in capabilities else None)

    def control(self, node: str) -> Control:
        return Control(node, self._calls)


def _expire(capabilities: frozenset[Capability]) -> tuple[list[str], dict[str, str]]:
    calls: list[str] = []
    target = ThirdParty(capabilities, calls)
    network = target.network
    ctx = FaultContext(target, ProcessFaults(),
                       Partitioner(network) if network is not None else None, TOPIC)
    started = time.monotonic()
    event = FAULTS["expire-session"].inject(ctx, ("x-broker1",), random.Random(1))
    assert time.monotonic() - started >= 1.5 * target.session_timeout_s
    return calls, dict(event.detail["sessions"])


def test_a_session_is_expired_by_a_cut_from_the_metadata_store() -> None:
    calls, how = _expire(frozenset({"partition", "pause"}))
    # each step drops on both nodes at once, in either order
    assert sorted(calls[:2]) == ["x-broker1 drops x-zk1", "x-zk1 drops x-broker1"]
    assert sorted(calls[2:]) == ["x-broker1 drops nothing", "x-zk1 drops nothing"]
    assert how["x-broker1"].startswith("cut from the metadata store")


def test_a_session_is_expired_by_a_pause_where_nothing_can_be_cut() -> None:
    calls, how = _expire(frozenset({"pause"}))
    assert calls == ["pause x-broker1", "resume x-broker1"]
    assert how["x-broker1"].startswith("paused for")


def _surface(capabilities: frozenset[Capability]) -> Surface:
    return Surface((Node("x-broker1", "broker", "x", "h", capabilities),
                    Node("x-zk1", "zookeeper", "x", "h", capabilities)))


def _timeline(fault: str) -> NemesisSettings:
    return NemesisSettings("timeline", timeline=(TimedFault(1.0, fault, 1.0),))


@pytest.mark.parametrize(("fault", "capabilities", "message"), [
    ("isolate", frozenset({"kill", "pause"}), "the target cannot take isolate: it needs "
                                              "partition, which no node offers"),
    ("kill", frozenset({"pause"}), "the target cannot take kill: it needs kill"),
    ("expire-session", frozenset(), "expire-session needs brokers whose session can be"),
    ("cut-clients", frozenset({"partition"}), "the target cannot take cut-clients: it needs "
                                              "cut-clients, which no node offers"),
])
def test_a_fault_the_target_cannot_take_is_refused_by_name(
        fault: str, capabilities: frozenset[Capability], message: str) -> None:
    with pytest.raises(FaultPlanError, match=f"^t.toml: nemesis.timeline.0..fault: {message}"):
        build_schedule(_timeline(fault), _surface(capabilities), 1, 10.0, "t.toml")


def test_the_same_fault_is_planned_where_the_target_can_take_it() -> None:
    schedule = build_schedule(_timeline("expire-session"), _surface(frozenset({"pause"})), 1,
                              10.0, "t.toml")
    assert [(s.fault, s.targets) for s in schedule.steps] in (
        [("expire-session", ("owner",))], [("expire-session", ("x-broker1",))])


def test_a_client_cut_acts_on_the_port_of_the_brokers_service_url() -> None:
    calls: list[str] = []
    target = ThirdParty(frozenset({"partition", "cut-clients"}), calls)
    assert target.network is not None
    ctx = FaultContext(target, ProcessFaults(), Partitioner(target.network), TOPIC)
    event = FAULTS["cut-clients"].inject(ctx, ("x-broker1",), random.Random(1))
    assert calls == ["x-broker1 cuts its clients on 6650"]
    assert event.detail == {"port": 6650}
    FAULTS["cut-clients"].end(ctx, ("x-broker1",))
    assert calls[-1] == "x-broker1 drops nothing"


def test_a_client_cut_aimed_at_a_node_that_is_no_broker_is_refused() -> None:
    settings = NemesisSettings("timeline", timeline=(TimedFault(1.0, "cut-clients", 1.0,
                                                                ("x-zk1",)),))
    with pytest.raises(FaultPlanError, match="cut-clients cuts the clients from one broker"):
        build_schedule(settings, _surface(frozenset({"partition", "cut-clients"})), 1, 10.0,
                       "t.toml")


class TwoBrokers:
    """One cluster: two brokers and a metadata-store node, whose network drops what it is
    told to."""

    def __init__(self, calls: list[str]) -> None:
        caps: frozenset[Capability] = frozenset({"partition"})
        nodes = (Node("x-broker1", "broker", "x", "10.0.0.1", caps),
                 Node("x-broker2", "broker", "x", "10.0.0.2", caps),
                 Node("x-zk1", "zookeeper", "x", "10.0.0.3", caps))
        self.clusters = (TargetCluster("x", ("pulsar://10.0.0.1:6650", "pulsar://10.0.0.2:6650"),
                                       ("http://10.0.0.1:8080", "http://10.0.0.2:8080"),
                                       "10.0.0.3:2181", nodes),)
        self.network = Network([n.name for n in nodes], calls)


@pytest.mark.parametrize(("fault", "targets", "cut"), [
    ("broker-from-zookeeper", ("x-broker2",), ["x-broker2"]),
    ("brokers-from-zookeeper", (), ["x-broker1", "x-broker2"]),
])
def test_a_cut_from_zookeeper_leaves_the_other_brokers_hearing_it(
        fault: str, targets: tuple[str, ...], cut: list[str]) -> None:
    calls: list[str] = []
    target = TwoBrokers(calls)
    ctx = FaultContext(target, ProcessFaults(), Partitioner(target.network), TOPIC)
    FAULTS[fault].inject(ctx, targets, random.Random(1))
    assert sorted(calls) == sorted([f"{b} drops x-zk1" for b in cut]
                                   + [f"x-zk1 drops {','.join(cut)}"])


def test_a_cut_from_zookeeper_aimed_at_a_node_that_is_no_broker_is_refused() -> None:
    settings = NemesisSettings("timeline", timeline=(
        TimedFault(1.0, "broker-from-zookeeper", 1.0, ("x-zk1",)),))
    with pytest.raises(FaultPlanError, match="broker-from-zookeeper cuts one broker from the "
                                             "metadata store"):
        build_schedule(settings, _surface(frozenset({"partition"})), 1, 10.0, "t.toml")


class ThreeRegions:
    """Three one-broker clusters x, y, z, whose network drops what it is told to."""

    def __init__(self, calls: list[str]) -> None:
        caps: frozenset[Capability] = frozenset({"partition"})
        self.nodes = tuple(Node(f"{c}-broker1", "broker", c, f"10.0.0.{n}", caps)
                           for n, c in enumerate("xyz"))
        self.clusters = tuple(TargetCluster(n.cluster, (), (), "", (n,)) for n in self.nodes)
        self.network = Network([n.name for n in self.nodes], calls)


def test_a_wan_cut_between_two_named_clusters_leaves_the_third_hearing_both() -> None:
    calls: list[str] = []
    target = ThreeRegions(calls)
    ctx = FaultContext(target, ProcessFaults(), Partitioner(target.network), TOPIC)
    FAULTS["cut-wan"].inject(ctx, ("x", "z"), random.Random(1))
    assert sorted(calls) == ["x-broker1 drops z-broker1", "z-broker1 drops x-broker1"]
    calls.clear()
    FAULTS["cut-wan"].inject(ctx, (), random.Random(1))  # no targets: x from all others
    assert "x-broker1 drops y-broker1,z-broker1" in calls


@pytest.mark.parametrize(("targets", "message"), [
    (("x", "w"), r"targets\[1\]: expected a cluster name \(one of x, y, z\), got 'w'"),
    (("x",), "cut-wan cuts two clusters apart, or the first from all others"),
    (("x", "x"), "cut-wan cuts two clusters apart, or the first from all others"),
])
def test_a_wan_cut_takes_two_distinct_cluster_names(targets: tuple[str, ...],
                                                    message: str) -> None:
    settings = NemesisSettings("timeline", timeline=(TimedFault(1.0, "cut-wan", 1.0,
                                                                targets),))
    with pytest.raises(FaultPlanError, match=message):
        build_schedule(settings, Surface(ThreeRegions([]).nodes), 1, 10.0, "t.toml")
