"""What the partitioner runs in each node's namespace, and the events it reports, with
nodes that record the commands instead of running them (the container tests run them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from harness.targets.docker.iptables import CHAIN, IptablesNetwork, PartitionFailed, restore_input
from nemesis.grudge import ShapeNotApplicable
from nemesis.partition import Partitioner


@dataclass
class RecordingNode:
    name: str
    ips: tuple[str, ...]
    restores: list[str] = field(default_factory=list)
    exit_code: int = 0

    def run_in_netns(self, argv: Sequence[str]) -> tuple[int, str]:
        self.restores.append(argv[-1])  # the iptables-restore text is the last argument
        return self.exit_code, "iptables: Permission denied" if self.exit_code else ""

    def drops(self) -> set[str]:
        last = self.restores[-1]
        return {line.split()[3].removesuffix("/32") for line in last.splitlines()
                if line.startswith(f"-A {CHAIN}")}


@pytest.fixture
def nodes() -> dict[str, RecordingNode]:
    return {
        "a-zk1": RecordingNode("a-zk1", ("10.0.0.2",)),
        "a-broker1": RecordingNode("a-broker1", ("10.0.0.3", "10.9.0.3")),
        "b-broker1": RecordingNode("b-broker1", ("10.1.0.2", "10.9.0.4")),
    }


def test_restore_input_replaces_our_chain_only() -> None:
    text = restore_input(["10.0.0.3"])
    assert text.splitlines() == ["*filter", f":{CHAIN} - [0:0]",
                                 f"-A {CHAIN} -s 10.0.0.3/32 -j DROP", "COMMIT"]


def test_a_client_cut_spares_the_targets_nodes_and_drops_everyone_else_on_one_port(
        nodes: dict[str, RecordingNode]) -> None:
    partitioner = Partitioner(IptablesNetwork(nodes.values()))
    partitioner.isolate("a-zk1")
    event = partitioner.cut_clients("a-broker1", 6650)
    rules = [line for line in nodes["a-broker1"].restores[-1].splitlines()
             if line.startswith(f"-A {CHAIN}")]
    spared = {"10.0.0.2", "10.0.0.3", "10.9.0.3", "10.1.0.2", "10.9.0.4"}
    assert rules[0] == f"-A {CHAIN} -i lo -j RETURN"
    assert set(rules[1:-1]) == {f"-A {CHAIN} -s {ip}/32 -p tcp --dport 6650 -j RETURN"
                                for ip in spared}
    assert rules[-1] == f"-A {CHAIN} -p tcp --dport 6650 -j DROP"
    assert nodes["a-zk1"].drops() == set()  # the isolation before it was healed
    assert (event.f, event.value, event.targets) == ("partition", "cut-clients", ("a-broker1",))
    assert partitioner.heal().f == "heal"
    assert nodes["a-broker1"].drops() == set()


def test_a_node_drops_every_address_of_the_nodes_it_holds_a_grudge_against(
        nodes: dict[str, RecordingNode]) -> None:
    event = Partitioner(IptablesNetwork(nodes.values())).isolate("a-broker1")
    assert nodes["a-broker1"].drops() == {"10.0.0.2", "10.1.0.2", "10.9.0.4"}
    assert nodes["a-zk1"].drops() == {"10.0.0.3", "10.9.0.3"}
    assert (event.f, event.value, event.targets) == ("partition", "isolate", ("a-broker1",))
    assert event.history_fields()["detail"]["grudge"]["a-zk1"] == ["a-broker1"]


def test_a_new_partition_heals_nodes_it_no_longer_names(nodes: dict[str, RecordingNode]
                                                        ) -> None:
    partitioner = Partitioner(IptablesNetwork(nodes.values()))
    partitioner.isolate("a-zk1")
    partitioner.cut_wan(["a-zk1", "a-broker1"], ["b-broker1"])
    assert nodes["a-zk1"].drops() == {"10.1.0.2", "10.9.0.4"}
    partitioner.brokers_from_zookeeper(["a-broker1"], ["a-zk1"])
    assert nodes["b-broker1"].drops() == set()  # no longer in the grudge: flushed


def test_heal_empties_the_chain_everywhere_a_rule_was_added(nodes: dict[str, RecordingNode]
                                                            ) -> None:
    partitioner = Partitioner(IptablesNetwork(nodes.values()))
    partitioner.cut_wan(["a-zk1", "a-broker1"], ["b-broker1"])
    event = partitioner.heal()
    assert all(node.drops() == set() for node in nodes.values())
    assert (event.f, event.targets) == ("heal-wan", ("a-broker1", "a-zk1", "b-broker1"))
    assert partitioner.grudge == {}


def test_a_failing_iptables_names_the_node_and_its_output(nodes: dict[str, RecordingNode]
                                                          ) -> None:
    nodes["a-zk1"].exit_code = 4
    with pytest.raises(PartitionFailed, match="a-zk1's network namespace exited 4: "
                                              "iptables: Permission denied"):
        Partitioner(IptablesNetwork(nodes.values())).isolate("a-zk1")


def test_unknown_nodes_are_named(nodes: dict[str, RecordingNode]) -> None:
    with pytest.raises(ShapeNotApplicable, match=r"unknown nodes \['c-zk1'\]"):
        Partitioner(IptablesNetwork(nodes.values())).partition({"a-zk1": ["c-zk1"]})
