"""The network control of nodes in their own network namespaces: iptables rules.

Every rule we add lives in one chain of our own, `STARQUAKE`, which the first drop creates
in a node's namespace and jumps to from the top of INPUT. A node's drops are replaced
atomically with one `iptables-restore --noflush` (declaring a chain in a restore flushes
it), and letting everything through again restores an empty chain: exactly our rules go,
whatever else the namespace holds (the engine's DNS rules live in the nat table and are
never touched).

Only INPUT is filtered, as Jepsen does: a node drops what it receives. The host's own
traffic (the clients the harness runs) is dropped only by a client cut, which spares the
Target's nodes and drops everyone else who addresses one port.

`apply_drops` and `remove_chain` work on any `Namespace`, anything that runs a command in
a network namespace: our nodes' netns holders (`docker exec`), and a third party's
containers entered from the host (`harness/targets/external/docker_control.py`, `nsenter`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from history.errors import EnvironmentProblem

CHAIN = "STARQUAKE"
# $1 is the iptables-restore input; one exec per node per change.
_APPLY_SCRIPT = (
    f"iptables -w -N {CHAIN} 2>/dev/null; "
    f"iptables -w -C INPUT -j {CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {CHAIN} || exit 1; "
    'printf "%s" "$1" | iptables-restore -w --noflush'
)
# Every jump to our chain, then the chain: a namespace as it was before our first drop.
_REMOVE_SCRIPT = (
    f"while iptables -w -D INPUT -j {CHAIN} 2>/dev/null; do :; done; "
    f"iptables -w -F {CHAIN} 2>/dev/null; iptables -w -X {CHAIN} 2>/dev/null; "
    f"if iptables -w -S {CHAIN} >/dev/null 2>&1; then echo 'chain {CHAIN} remains'; exit 1; fi"
)


class PartitionFailed(EnvironmentProblem):
    """iptables failed in a node's network namespace; the message has its output."""


class Namespace(Protocol):
    """A network namespace we can run iptables in, named for messages."""

    @property
    def name(self) -> str: ...

    def run_in_netns(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run `argv` in the namespace with NET_ADMIN; exit code and output."""
        ...


class NetworkNode(Namespace, Protocol):
    """What a drop needs of a node (harness.targets.docker.containers.ContainerNode has it)."""

    @property
    def ips(self) -> tuple[str, ...]: ...


def restore_input(drop_from: Iterable[str], to_port: int | None = None) -> str:
    """The iptables-restore text that makes our chain drop packets from `drop_from`: all
    of them, or with `to_port` only TCP segments addressed to that port."""
    match = "" if to_port is None else f" -p tcp --dport {to_port}"
    return _restore([f"-A {CHAIN} -s {ip}/32{match} -j DROP" for ip in sorted(drop_from)])


def restore_cut_clients(spare: Iterable[str], port: int) -> str:
    """The iptables-restore text that makes our chain drop the TCP segments addressed to
    `port` from every address but `spare` (the Target's nodes) and the namespace's own
    loopback: whoever else connects there, the workloads' clients wherever they run, is
    cut off, while the node's peers are not."""
    match = f"-p tcp --dport {port}"
    return _restore([f"-A {CHAIN} -i lo -j RETURN",
                     *(f"-A {CHAIN} -s {ip}/32 {match} -j RETURN" for ip in sorted(spare)),
                     f"-A {CHAIN} {match} -j DROP"])


def _restore(rules: list[str]) -> str:
    return "\n".join(["*filter", f":{CHAIN} - [0:0]", *rules, "COMMIT", ""])


def apply_input(namespace: Namespace, restore: str) -> None:
    """Make our chain in `namespace` hold the rules of `restore` (`restore_input`,
    `restore_cut_clients`), replacing our previous rules there in one step."""
    _run(namespace, _APPLY_SCRIPT, restore)


def apply_drops(namespace: Namespace, drop_from: Iterable[str], to_port: int | None = None
                ) -> None:
    """Make `namespace` drop what it receives from the addresses `drop_from` (all of it, or
    only TCP to `to_port`), replacing our previous rules there in one step."""
    apply_input(namespace, restore_input(drop_from, to_port))


def remove_chain(namespace: Namespace) -> None:
    """Remove our chain and every jump to it: nothing of ours stays in a namespace that is
    not ours once its partition is healed."""
    _run(namespace, _REMOVE_SCRIPT)


def _run(namespace: Namespace, script: str, *args: str) -> None:
    code, output = namespace.run_in_netns(["sh", "-c", script, "sh", *args])
    if code != 0:
        raise PartitionFailed(f"iptables in {namespace.name}'s network namespace exited "
                              f"{code}: {output.strip()}")


class IptablesNetwork:
    """A `NetworkControl` over nodes that each have a network namespace of their own."""

    def __init__(self, nodes: Iterable[NetworkNode]) -> None:
        self._nodes = {node.name: node for node in nodes}

    @property
    def names(self) -> list[str]:
        return list(self._nodes)

    def drop(self, node: str, sources: Iterable[str], to_port: int | None = None) -> None:
        ips = [ip for source in sources for ip in self._nodes[source].ips]
        apply_drops(self._nodes[node], ips, to_port)

    def cut_clients(self, node: str, port: int) -> None:
        apply_input(self._nodes[node], restore_cut_clients(
            [ip for peer in self._nodes.values() for ip in peer.ips], port))
