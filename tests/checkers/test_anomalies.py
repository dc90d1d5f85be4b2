"""Every anomaly of the history contract: a small history that has it, with its exact count,
and a near-identical legal one that does not. All cases are checked as the runs of one
directory, in one Spark job, the way `starquake check runs/` does."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from history.checker_registry import CHECKER_NAMES
from history.schema import key_hash
from tests.checkers.builder import History, prepared_cases

Case = Callable[[History], None]
CASES: dict[str, tuple[Case, dict[str, int]]] = {}
META: dict[str, dict[str, object]] = {}
"""A case's `meta` settings beyond its scenario and seed."""


def case(name: str, meta: dict[str, object] | None = None,
         **expected: int) -> Callable[[Case], Case]:
    """Register a history; `expected` maps checker names (underscored) to counts, every
    other checker must find nothing."""
    def register(build: Case) -> Case:
        CASES[name] = (build, {k.replace("_", "-"): v for k, v in expected.items()})
        META[name] = meta or {}
        return build
    return register


def _sent_and_read(h: History, values: list[str], mode: str = "exclusive") -> None:
    h.subscribe("s", mode)
    for n, v in enumerate(values):
        h.send(v, position=f"1:{n}")
    for n, v in enumerate(values):
        h.recv(v, position=f"1:{n}")
        h.ack(v)


@case("legal")
def _legal(h: History) -> None:
    _sent_and_read(h, ["m1", "m2", "m3"])
    h.drain()


@case("lost", lost=1)
def _lost(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.send("m2", position="1:1")
    h.recv("m1", position="1:0")
    h.drain()


@case("lost-legal-info-send")
def _lost_legal(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.send("m2", outcome="info")  # may or may not have been written
    h.recv("m1", position="1:0")
    h.drain()


@case("lost-legal-subscribed-later")
def _subscribed_later(h: History) -> None:
    h.send("m1", position="1:0")
    h.subscribe("s", "exclusive")
    h.drain()


@case("lost-received-in-other-cluster")
def _received_elsewhere(h: History) -> None:
    h.subscribe("s", "exclusive", cluster="a")
    h.send("m1", cluster="a", position="1:0")
    h.failover("s", "a", "b")
    h.recv("m1", cluster="b", position="7:0")
    h.drain()


def _unlinked_b_to_a(h: History, send_at_ms: float, cluster: str = "b", *,
                     unlink_ms: float = 1000, relink_ms: float = 3000, named: bool = True,
                     a_down_ms: tuple[float, float] | None = None) -> None:
    """Two clusters, a late subscription in each; b stops replicating to a from
    `unlink_ms` to `relink_ms` (the completions naming the receiver when `named`), a's
    broker is down over `a_down_ms` when given, and m1 is sent in `cluster` at
    `send_at_ms`, received in b only."""
    h.subscribe("late-a", "exclusive", cluster="a")
    h.subscribe("late-b", "exclusive", cluster="b")
    receiver = {"receiver": "a"} if named else {}
    targets = ["b", "a"] if named else []
    steps: list[tuple[float, Callable[[], object]]] = [
        (unlink_ms, lambda: h.nemesis("unlink-replication", targets=targets,
                                      replication_clusters={"b": ["b"]}, **receiver)),
        (relink_ms, lambda: h.nemesis("relink-replication", targets=targets,
                                      replication_clusters={"b": ["b", "a"]}, **receiver)),
        (send_at_ms, lambda: h.send("m1", cluster=cluster, position="1:0"))]
    if a_down_ms is not None:
        steps += [(a_down_ms[0], lambda: h.nemesis("kill", targets=["a-broker1"])),
                  (a_down_ms[1], lambda: h.nemesis("start", targets=["a-broker1"]))]
    for at_ms, step in sorted(steps, key=lambda timed: timed[0]):
        h.at(at_ms)
        step()
    h.recv("m1", "late-b", cluster="b", position="1:0")
    h.drain()


@case("lost-legal-written-while-unlinked")
def _written_while_unlinked(h: History) -> None:
    """What b wrote while it did not replicate to a never reaches a: not lost there."""
    _unlinked_b_to_a(h, send_at_ms=2000)


@case("lost-legal-written-while-unlinked-receiver-unnamed")
def _receiver_unnamed(h: History) -> None:
    """A history whose unlink names no receiver: the relink says which cluster it was."""
    _unlinked_b_to_a(h, send_at_ms=2000, named=False)


@case("lost-legal-in-the-replicators-backlog")
def _in_the_backlog(h: History) -> None:
    """Written just before the unlink, still in the replicator the unlink removed."""
    _unlinked_b_to_a(h, send_at_ms=500)


@case("lost-legal-held-back-by-an-outage-before-the-unlink")
def _held_back_before_the_unlink(h: History) -> None:
    """a's broker is down from 1 s to 8 s, so b's replicator falls behind; the unlink at
    9 s drops what it still held, written from 2 s on."""
    _unlinked_b_to_a(h, send_at_ms=2000, unlink_ms=9000, relink_ms=11_000,
                     a_down_ms=(1000, 8000))


@case("lost-written-long-before-the-unlink", lost=1)
def _long_before_the_unlink(h: History) -> None:
    _unlinked_b_to_a(h, send_at_ms=100, unlink_ms=10_000, relink_ms=12_000)


@case("lost-written-long-after-the-relink", lost=1)
def _long_after_the_relink(h: History) -> None:
    _unlinked_b_to_a(h, send_at_ms=9000)


@case("lost-legal-unlinked-both-ways-one-relinked")
def _unlinked_both_ways(h: History) -> None:
    """b stops replicating to a at 1 s, a to b at 2 s; b to a comes back at 3 s, a to b
    at 12 s. What a wrote at 9 s, long after the first relink, was never owed to b: a
    relink ends only the unlink of its own pair (an explore draw of three clusters)."""
    h.subscribe("late-a", "exclusive", cluster="a")
    h.subscribe("late-b", "exclusive", cluster="b")
    for at_ms, f, pair in ((1000, "unlink-replication", ["b", "a"]),
                           (2000, "unlink-replication", ["a", "b"]),
                           (3000, "relink-replication", ["b", "a"])):
        h.at(at_ms).nemesis(f, targets=pair, receiver=pair[1],
                            replication_clusters={pair[0]: [pair[0]]})
    h.at(9000).send("m1", cluster="a", position="1:0")
    h.at(12_000).nemesis("relink-replication", targets=["a", "b"], receiver="b",
                         replication_clusters={"a": ["a", "b"]})
    h.recv("m1", "late-a", cluster="a", position="1:0")
    h.drain()


@case("lost-legal-unlinked-without-targets-another-pair-relinked-inside")
def _unlinked_without_targets(h: History) -> None:
    """b stops replicating to a at 1 s by an unlink without targets (every other cluster
    to the first); a to b is unlinked at 2 s and relinked at 3 s; b to a comes back with
    the final heal at 12 s. What b wrote at 9 s was never owed to a: the relink at 3 s,
    of the other pair, is not the end of the unlink without targets (an explore draw's
    background unlink inside another)."""
    h.subscribe("late-a", "exclusive", cluster="a")
    h.subscribe("late-b", "exclusive", cluster="b")
    h.at(1000).nemesis("unlink-replication", targets=[], receiver="a",
                       replication_clusters={"b": ["b"]})
    for at_ms, f, listed in ((2000, "unlink-replication", ["a"]),
                             (3000, "relink-replication", ["a", "b"])):
        h.at(at_ms).nemesis(f, targets=["a", "b"], receiver="b",
                            replication_clusters={"a": listed})
    h.at(9000).send("m1", cluster="b", position="1:0")
    h.at(12_000).nemesis("relink-replication", targets=[], receiver="a",
                         replication_clusters={"b": ["b", "a"]})
    h.recv("m1", "late-b", cluster="b", position="1:0")
    h.drain()


@case("lost-written-while-unlinked-by-the-receiver", lost=1)
def _written_by_the_receiver(h: History) -> None:
    """a still replicates to b, and its own subscription owes what a wrote."""
    _unlinked_b_to_a(h, send_at_ms=2000, cluster="a")


@case("lost-while-unlinked-yet-replicated", lost=1)
def _replicated_after_all(h: History) -> None:
    """Another subscription in a received m1, so it was replicated; late-a owes it."""
    h.subscribe("live", "exclusive", cluster="a")
    _unlinked_b_to_a(h, send_at_ms=2000)
    h.recv("m1", "live", cluster="a", position="9:0")


@case("no-drain")
def _no_drain(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")


@case("unexpected", unexpected=1, lost=0)
def _unexpected(h: History) -> None:
    _sent_and_read(h, ["m1"])
    h.recv("ghost")
    h.recv("ghost")  # the same (subscription, value) counts once
    h.drain()


@case("unexpected-in-each-cluster", unexpected=2)
def _unexpected_in_each_cluster(h: History) -> None:
    """S is a subscription in one cluster: the same stray value in two is two pairs."""
    h.subscribe("s", "exclusive")
    h.recv("ghost", cluster="a")
    h.failover("s", "a", "b")
    h.recv("ghost", cluster="b", position="7:0")
    h.drain()


@case("failed-delivered", failed_delivered=1)
def _failed_delivered(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", outcome="fail")
    h.recv("m1", position="1:0")
    h.drain()


@case("failed-delivered-legal-info")
def _info_delivered(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", outcome="info")
    h.recv("m1", position="1:0")
    h.drain()


@case("duplicate", duplicate=1)
def _duplicate(h: History) -> None:
    _sent_and_read(h, ["m1"])
    h.recv("m1", position="1:0")
    h.drain()


@case("duplicate-legal-redelivered-before-ack")
def _redelivered_before_ack(h: History) -> None:
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.ack("m1")
    h.drain()


@case("duplicate-cumulative", duplicate=2)
def _duplicate_cumulative(h: History) -> None:
    h.subscribe("s", "exclusive")
    for n, v in enumerate(["m1", "m2", "m3"]):
        h.send(v, position=f"1:{n}")
        h.recv(v, position=f"1:{n}")
    h.ack("m2", cumulative=True)  # covers m1 and m2, not m3
    for n, v in enumerate(["m1", "m2", "m3"]):
        h.recv(v, position=f"1:{n}")
    h.ack("m3", cumulative=True)
    h.drain()


@case("duplicate-legal-failed-cumulative-ack")
def _failed_cumulative(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.ack("m1", cumulative=True, outcome="fail")
    h.recv("m1", position="1:0")
    h.ack("m1", cumulative=True)
    h.drain()


def _failover_after(h: History, ack_at_ms: float, failover_at_ms: float) -> None:
    h.subscribe("s", "failover", cluster="a")
    h.subscribe("s", "failover", cluster="b")
    h.send("m1", cluster="a", position="1:0")
    h.recv("m1", cluster="a", position="1:0")
    h.at(ack_at_ms).ack("m1", cluster="a")
    h.at(failover_at_ms).failover("s", "a", "b")
    h.recv("m1", cluster="b", position="9:0")
    h.ack("m1", cluster="b")
    h.drain()


@case("duplicate-window", duplicate_window=1)
def _window_too_long(h: History) -> None:
    _failover_after(h, ack_at_ms=100, failover_at_ms=5100)  # 5 s > 2 s default bound


@case("duplicate-window-legal-within-bound")
def _window_within_bound(h: History) -> None:
    _failover_after(h, ack_at_ms=100, failover_at_ms=1100)


@case("duplicate-window-legal-while-the-wan-is-cut")
def _window_in_a_wan_cut(h: History) -> None:
    """PIP-33 takes no snapshot while a cluster is unreachable: a failover then carries no
    bound, and the 5 s window of the anomaly above is no anomaly here."""
    h.at(50).nemesis("cut-wan")
    _failover_after(h, ack_at_ms=100, failover_at_ms=5100)
    h.at(8000).nemesis("heal-wan")


SHORT_SNAPSHOT_TIMEOUT = {"snapshot_timeout_ms": 3000}
"""A run's snapshot timeout well under the replicators' recovery (`RECOVERY_MS`)."""


@case("duplicate-window-after-the-wan-recovered", SHORT_SNAPSHOT_TIMEOUT, duplicate_window=1)
def _window_after_wan_recovery(h: History) -> None:
    """Past the recovery allowance after the heal, the bound holds again."""
    h.at(50).nemesis("cut-wan")
    h.at(80).nemesis("heal-wan")
    _failover_after(h, ack_at_ms=100, failover_at_ms=100 + 10_000 + 3000)


@case("duplicate-window-legal-while-replication-is-unlinked")
def _window_in_an_unlink(h: History) -> None:
    """A cluster that stops replicating to the one failed over from cannot answer its
    snapshot requests: no bound either, until the relink and the recovery after it."""
    h.at(50).nemesis("unlink-replication")
    h.at(80).nemesis("relink-replication")
    _failover_after(h, ack_at_ms=100, failover_at_ms=5100)


@case("duplicate-window-legal-while-an-owner-is-down")
def _window_in_a_kill(h: History) -> None:
    """A topic whose owner is killed takes no snapshot until it is served again, and the
    snapshot in flight is lost: no bound until the recovery after the start."""
    h.at(50).nemesis("kill", targets=["a-broker1"])
    h.at(80).nemesis("start", targets=["a-broker1"])
    _failover_after(h, ack_at_ms=100, failover_at_ms=5100)


@case("duplicate-window-after-the-owner-recovered", SHORT_SNAPSHOT_TIMEOUT,
      duplicate_window=1)
def _window_after_owner_recovery(h: History) -> None:
    h.at(50).nemesis("expire-session", targets=["a-broker1"])
    _failover_after(h, ack_at_ms=100, failover_at_ms=100 + 10_000 + 3000)


@case("duplicate-window-after-the-relink-recovered", SHORT_SNAPSHOT_TIMEOUT,
      duplicate_window=1)
def _window_after_relink_recovery(h: History) -> None:
    h.at(50).nemesis("unlink-replication")
    h.at(80).nemesis("relink-replication")
    _failover_after(h, ack_at_ms=100, failover_at_ms=100 + 10_000 + 3000)


@case("duplicate-window-legal-until-a-lost-snapshot-times-out")
def _window_before_the_snapshot_timeout(h: History) -> None:
    """A snapshot whose requests the cut lost holds up the next until it times out: with
    no snapshot timeout in the `meta`, Pulsar's 30 s, so 13 s after the heal is still
    recovery."""
    h.at(50).nemesis("cut-wan")
    h.at(80).nemesis("heal-wan")
    _failover_after(h, ack_at_ms=100, failover_at_ms=100 + 10_000 + 3000)


@case("duplicate-window-after-the-snapshot-timeout", {"snapshot_timeout_ms": 20_000},
      duplicate_window=1)
def _window_after_the_snapshot_timeout(h: History) -> None:
    """Past the run's snapshot timeout and the next snapshot's moment, the bound holds."""
    h.at(50).nemesis("unlink-replication")
    h.at(80).nemesis("relink-replication")
    _failover_after(h, ack_at_ms=100, failover_at_ms=100 + 20_000 + 5000 + 3000)


def _split_topic(h: History) -> None:
    h.layout("T", {0: (0, 65535, []), 1: (0, 32767, [0]), 2: (32768, 65535, [0])})
    h.subscribe("s", "stream")


def _segment_of(key: str) -> int:
    return 1 if key_hash(key) <= 32767 else 2


@case("dual-write", dual_write=1)
def _dual_write(h: History) -> None:
    _split_topic(h)
    h.send("m1", key="a", segment=_segment_of("a"), position=f"{_segment_of('a')}:0")
    h.send("m2", key="a", segment=0, position="0:5")  # the parent took a write after a child
    for v, s, p in (("m1", _segment_of("a"), f"{_segment_of('a')}:0"), ("m2", 0, "0:5")):
        h.recv(v, position=p, segment=s)
        h.ack(v)
    h.drain()


@case("dual-write-legal-parent-first")
def _parent_first(h: History) -> None:
    _split_topic(h)
    h.send("m0", key="a", segment=0, position="0:4")
    h.send("m1", key="a", segment=_segment_of("a"), position=f"{_segment_of('a')}:0")
    for v, s, p in (("m0", 0, "0:4"), ("m1", _segment_of("a"), f"{_segment_of('a')}:0")):
        h.recv(v, position=p, segment=s)
        h.ack(v)
    h.drain()


@case("misrouted", misrouted=1)
def _misrouted(h: History) -> None:
    _split_topic(h)
    wrong = 3 - _segment_of("b")
    h.send("m1", key="b", segment=wrong, position=f"{wrong}:0")
    h.recv("m1", segment=wrong, position=f"{wrong}:0")
    h.ack("m1")
    h.drain()


@case("forked-position", forked_position=1)
def _forked(h: History) -> None:
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.send("m2", position="1:0", process="p1")
    h.recv("m1", position="1:0")
    h.recv("m2", position="1:0")
    h.ack("m1")
    h.ack("m2")
    h.drain()


@case("forked-position-legal-batch-indexes")
def _batched(h: History) -> None:
    h.subscribe("s", "shared")
    h.send("m1", position="1:0:0")
    h.send("m2", position="1:0:1", process="p1")
    h.recv("m1", position="1:0:0")
    h.recv("m2", position="1:0:1")
    h.ack("m1")
    h.ack("m2")
    h.drain()


def _reordered(h: History, mode: str, concurrent: bool = False) -> None:
    h.subscribe("s", mode)
    if concurrent:  # m2 invoked before m1 completed: no order is promised between them
        h.writer.record("p0", "invoke", "send", value="m1", key="k", topic="T", cluster="a")
        h.writer.record("p1", "invoke", "send", value="m2", key="k", topic="T", cluster="a")
        h.writer.record("p0", "ok", "send", position="1:0")
        h.writer.record("p1", "ok", "send", position="1:1")
    else:
        h.send("m1", position="1:0")
        h.send("m2", position="1:1")
    h.send("m3", position="1:2")
    for v, p in (("m2", "1:1"), ("m1", "1:0"), ("m3", "1:2")):
        h.recv(v, position=p)
        h.ack(v)
    h.drain()


@case("order", order=1)
def _order(h: History) -> None:
    _reordered(h, "exclusive")


@case("order-in-the-failover-target", order=1)
def _order_after_failover(h: History) -> None:
    """First deliveries are compared per cluster: in b, after the failover, m2 came first
    although m1 was acknowledged before m2 was sent, whatever a saw before."""
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.send("m2", position="1:1")
    h.recv("m1", position="1:0")
    h.recv("m2", position="1:1")
    h.failover("s", "a", "b")
    for v, p in (("m2", "7:1"), ("m1", "7:0")):
        h.recv(v, cluster="b", position=p)
        h.ack(v, cluster="b")
    h.drain()


def _consumed_in_two_clusters(h: History, acked_in_c_first: bool) -> None:
    """A replicated Key_Shared subscription consumed in a and c at once: m1 delivered and
    acknowledged in c, m2 sent after m1 completed, and a delivering m2 before m1."""
    h.subscribe("s", "key_shared")
    h.subscribe("s", "key_shared", cluster="c")
    h.send("m1", position="1:0")
    h.recv("m1", cluster="c", position="5:0", process="c1")
    if acked_in_c_first:
        h.ack("m1", cluster="c", process="c1", position="5:0")
    h.send("m2", position="1:1")
    h.recv("m2", position="1:1", process="c2")
    h.ack("m2", process="c2", position="1:1")
    h.recv("m1", position="1:0")
    h.ack("m1", position="1:0")
    if not acked_in_c_first:
        h.ack("m1", cluster="c", process="c1", position="5:0")
    h.recv("m2", cluster="c", position="5:1", process="c1")
    h.ack("m2", cluster="c", process="c1", position="5:1")
    h.drain()


@case("order-legal-a-message-acknowledged-in-another-cluster")
def _acknowledged_elsewhere(h: History) -> None:
    """c's acknowledgement of m1, replicated, acknowledged it in a too and released its
    key there, so m2 could overtake a's copy of m1: a copy delivered after the message
    was acknowledged in the subscription is no first delivery."""
    _consumed_in_two_clusters(h, acked_in_c_first=True)


@case("order-in-a-cluster-before-another-acknowledged", order=1)
def _overtaken_before_acknowledged(h: History) -> None:
    """The same deliveries, but c acknowledged m1 only after a delivered it: nothing had
    released m1's key in a when m2 overtook it."""
    _consumed_in_two_clusters(h, acked_in_c_first=False)


@case("order-legal-queue-subscription")
def _queue_reorders(h: History) -> None:
    _reordered(h, "queue")


@case("order-legal-concurrent-sends")
def _concurrent(h: History) -> None:
    _reordered(h, "key_shared", concurrent=True)


@case("nemesis-partition-and-heal")
def _partition_and_heal(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.at(1000).nemesis("partition", targets=["b1"])
    h.send("m2", outcome="fail", process="p1")
    h.send("m3", outcome="info", process="p2")
    h.at(5000).nemesis("heal")
    h.at(5250).send("m4", position="1:1", process="p3")
    for n, v in enumerate(["m1", "m4"]):
        h.recv(v, position=f"1:{n}")
        h.ack(v)
    h.drain()


@case("nemesis-fault-never-completed")
def _fault_never_completed(h: History) -> None:
    """The run was cut off before the nemesis recorded its fault's completion."""
    _sent_and_read(h, ["m1"])
    h.at(1000).writer.record("nemesis", "invoke", "partition", value="partition")
    h.at(2000).send("m2", position="1:1")
    h.recv("m2", position="1:1")
    h.ack("m2")
    h.drain()


@case("multi-position", multi_position=1)
def _multi_position(h: History) -> None:
    """One value stored three times: more than one resend can leave."""
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:2")
    for position in ("1:0", "1:1", "1:2"):
        h.recv("m1", position=position)
    h.drain()


@case("multi-position-legal-producer-retry")
def _producer_retry(h: History) -> None:
    """The broker stored m1, died before answering; the client sent it again."""
    h.subscribe("s", "exclusive")
    h.send("m1", position="2:0")
    h.recv("m1", position="1:7")
    h.recv("m1", position="2:0")
    h.drain()


@case("multi-position-deduplicating", meta={"deduplication": True}, multi_position=1)
def _retry_deduplicating(h: History) -> None:
    _producer_retry(h)


@case("duplicate-legal-second-stored-copy")
def _second_copy(h: History) -> None:
    """The resent copy's first delivery, after the first copy's confirmed ack."""
    h.subscribe("s", "exclusive")
    h.send("m1", position="2:0")
    h.recv("m1", position="1:7")
    h.ack("m1", position="1:7")
    h.recv("m1", position="2:0")
    h.ack("m1", position="2:0")
    h.drain()


@case("duplicate-second-stored-copy-deduplicating", meta={"deduplication": True},
      duplicate=1, multi_position=1)
def _second_copy_deduplicating(h: History) -> None:
    _second_copy(h)


@case("duplicate-same-copy-again", duplicate=1)
def _same_copy_again(h: History) -> None:
    """A copy acknowledged, then delivered again: a duplicate, deduplication or not."""
    _second_copy(h)
    h.recv("m1", position="1:7")


def _stalled_for(h: History, seconds: int, **reading: int) -> None:
    """Readings once a second of a subscription with a backlog of 5 whose cursor stays
    at 1:0 (`reading` overrides their fields)."""
    _sent_and_read(h, ["m1"])
    for second in range(seconds + 1):
        h.at(1000 * (second + 1)).cursor("s", "1:0", **{"backlog": 5, "consumers": 2,
                                                          "unacked": 0, **reading})
    h.drain()


@case("stalled-subscription", stalled_subscription=1)
def _stalled(h: History) -> None:
    _stalled_for(h, 12)


@case("stalled-subscription-legal-within-bound")
def _stalled_briefly(h: History) -> None:
    _stalled_for(h, 9)


@case("stalled-subscription-legal-messages-out")
def _busy(h: History) -> None:
    """The consumers hold unacknowledged messages: slow, not stalled."""
    _stalled_for(h, 12, unacked=3)


@case("stalled-subscription-legal-no-consumer")
def _nobody_reading(h: History) -> None:
    _stalled_for(h, 12, consumers=0)


@case("stalled-subscription-legal-cursor-moves")
def _moving(h: History) -> None:
    _sent_and_read(h, ["m1"])
    for second in range(13):
        h.at(1000 * (second + 1)).cursor("s", f"1:{second}", backlog=5, consumers=2)
    h.drain()


def _segment_readings(h: History, seconds: int, *, moving: bool = False) -> None:
    """A scalable topic's `stream` subscription as a run once left it: segment 8 read to
    its end by a connected consumer, its children 17 and 18 dealt to nobody, their
    backlogs waiting; one reading a second (`moving`: segment 17 is being read)."""
    h.subscribe("stream", "stream", topic="topic://t/ns/x")
    for second in range(seconds + 1):
        h.at(1000 * (second + 1)).segment_cursor("stream", {
            "8": {"mark_delete": "16:479", "backlog": 0, "consumers": 1, "unacked": 0},
            "17": {"mark_delete": f"20:{second if moving else -1}", "backlog": 83,
                   "consumers": 1 if moving else 0, "unacked": 0},
            "18": {"mark_delete": "21:-1", "backlog": 145, "consumers": 0, "unacked": 0}},
            topic="topic://t/ns/x")


@case("stalled-subscription-segments-dealt-to-nobody", stalled_subscription=1)
def _segments_unassigned(h: History) -> None:
    _segment_readings(h, 12)
    h.drain()


@case("stalled-subscription-segments-legal-one-moves")
def _segment_read(h: History) -> None:
    _segment_readings(h, 12, moving=True)
    h.drain()


@case("stalled-subscription-segments-drain-timed-out", stalled_subscription=1)
def _segments_unassigned_undrained(h: History) -> None:
    """The drain gave up waiting: `lost` cannot decide, the stall still decides."""
    _segment_readings(h, 12)
    h.drain("info")


def _ack_unconfirmed(h: History, final_mark_delete: str, *, again: bool = False,
                     **reading: int) -> None:
    """m1 delivered at 1:0, its ack never confirmed; after the drain, the cursor."""
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.ack("m1", position="1:0", outcome="info")
    if again:
        h.recv("m1", position="1:0")
    h.drain()
    h.cursor("s", final_mark_delete, **{"backlog": 1, "consumers": 1, **reading})


@case("ack-unapplied", ack_unapplied=1)
def _unapplied(h: History) -> None:
    _ack_unconfirmed(h, "0:-1")


@case("ack-unapplied-legal-covered-at-the-end")
def _covered(h: History) -> None:
    _ack_unconfirmed(h, "1:0", backlog=0)


@case("ack-unapplied-legal-covered-by-a-range")
def _covered_by_range(h: History) -> None:
    h.subscribe("s", "exclusive")
    h.send("m1", position="1:1")
    h.recv("m1", position="1:1")
    h.ack("m1", position="1:1", outcome="info")
    h.drain()
    h.cursor("s", "0:-1", backlog=1, ranges=[["1:0", "1:1"]])


@case("ack-unapplied-legal-delivered-again")
def _delivered_again(h: History) -> None:
    _ack_unconfirmed(h, "0:-1", again=True)


@case("ack-unapplied-legal-still-out")
def _still_out(h: History) -> None:
    """The message is out at a consumer: the broker may yet get its ack."""
    _ack_unconfirmed(h, "0:-1", unacked=1)


UNAVAILABLE_BOUND = {"unavailable_bound_ms": 5000}
OPTIONAL_BOUNDS = {"unavailable": "unavailable_bound_ms",
                   "zombie-broker": "zombie_broker_bound_ms"}


def _key_down(h: History, back_at_ms: float | None) -> None:
    """Key k written at 0; its sends at 1000 (fail) and 3000 (`info`) wait; a send at
    `back_at_ms` (when given) is written. The waits end at the next success."""
    h.send("m1")
    h.at(1000).send("m2", outcome="fail")
    h.at(3000).send("m3", outcome="info")
    if back_at_ms is not None:
        h.at(back_at_ms).send("m4")


@case("unavailable", meta=UNAVAILABLE_BOUND, unavailable=1)
def _unavailable(h: History) -> None:
    _key_down(h, 7000)  # m2 waits 6 s, m3 4 s
    h.drain()


@case("unavailable-never-written-again", meta=UNAVAILABLE_BOUND, unavailable=1)
def _never_back(h: History) -> None:
    _key_down(h, None)
    h.at(6500).send("m4", outcome="info")  # m2 waits to the key's last event, 5.5 s
    h.drain()


@case("unavailable-in-one-cluster", meta=UNAVAILABLE_BOUND, unavailable=1)
def _down_in_a(h: History) -> None:
    h.send("m1")
    h.at(1000).send("m2", outcome="fail")
    h.at(2000).send("b1", cluster="b")  # written in b: no help to a
    h.at(7000).send("m4")
    h.drain()


@case("unavailable-legal-within-bound", meta=UNAVAILABLE_BOUND)
def _back_soon(h: History) -> None:
    _key_down(h, 5500)
    h.drain()


@case("unavailable-legal-another-send-written", meta=UNAVAILABLE_BOUND)
def _other_process_writes(h: History) -> None:
    """A send that failed waits only until any later send of its key is written."""
    h.send("m1")
    h.at(1000).send("m2", outcome="fail", process="p0")
    h.at(1500).send("m3", process="p1")
    h.at(9000).send("m4")
    h.drain()


@case("unavailable-legal-no-bound")
def _not_judged(h: History) -> None:
    _key_down(h, 60000)
    h.drain()


def _dealt_to_c0_then_shared(h: History) -> None:
    """c0 registers and is dealt every segment; c1 registers, and c0 gives half back while
    c1's registration is answered."""
    h.register("c0", [0, 1, 2, 3])
    h.registering("c1")
    h.assign("c0", [0, 2])
    h.registered("c1", [1, 3])


@case("reassigned", reassigned=2)
def _reassigned(h: History) -> None:
    """A new controller leader forgot the sessions: c0, registering again first, is dealt
    c1's segments too, and gives them back when c1 registers again."""
    _dealt_to_c0_then_shared(h)
    h.nemesis("kill-controller-leader")
    _dealt_to_c0_then_shared(h)
    h.drain()


@case("reassigned-legal-sessions-kept")
def _reassigned_legal_kept(h: History) -> None:
    _dealt_to_c0_then_shared(h)
    h.nemesis("kill-controller-leader")
    h.register("c1", [1, 3])
    h.register("c0", [0, 2])
    h.drain()


@case("reassigned-legal-segments-changed")
def _reassigned_legal_layout(h: History) -> None:
    """Segment 1 drained and its children 4 and 5 dealt out: what is dealt changed, and
    c0 takes 3 from c1 in the same rebalance."""
    _dealt_to_c0_then_shared(h)
    h.assign("c0", [0, 2, 4])
    h.assign("c1", [3, 5])
    h.drain()


@case("reassigned-legal-push-after-the-answer")
def _reassigned_legal_push_late(h: History) -> None:
    """The rebalance a join causes reaches c0 after the joiner heard its answer."""
    h.register("c0", [0, 1, 2, 3])
    h.register("c1", [1, 3])
    h.assign("c0", [0, 2])
    h.drain()


@case("reassigned-legal-fewer-dealt")
def _reassigned_legal_fewer(h: History) -> None:
    """Segments 1 and 3 merged and 3 drained: one rebalance deals only 1, to c0 by name
    order, so 1 moves from c1 to c0 and c1 is left nothing. Seen push by push, c1's
    looks like a move with the same segments dealt; across the rebalance, fewer are."""
    h.register("c0", [3])
    h.register("c1", [1])
    h.assign("c0", [1])
    h.assign("c1", [])
    h.drain()


@case("reassigned-legal-layouts-in-a-row")
def _reassigned_legal_layouts(h: History) -> None:
    """Segment 0 split (epoch 2): only c0's segments change, so only c0 is pushed to.
    Segment 1 split (epoch 3): c1 is dealt 2 of c0's with its children, and c0 keeps 3.
    By consumers alone, c1's push would join c0's of epoch 2 and c0's of epoch 3 would
    stand alone, a move of 2 with the same segments dealt."""
    h.register("c0", [0])
    h.register("c1", [1])
    h.assign("c0", [2, 3], epoch=2)
    h.assign("c1", [2, 4, 5], epoch=3)
    h.assign("c0", [3], epoch=3)
    h.drain()


@case("reassigned-legal-two-drains-in-one-layout")
def _reassigned_legal_two_drains(h: History) -> None:
    """One layout drains in two steps, each dealing again (explore's scalable seed 2): parent
    2 drained deals its children 3 and 4 to c1 and c2; a second later parent 0 drained
    leaves c0 without, and 3 and 4 are dealt again by name order, so c0, c1 and c2 are
    pushed to. By consumer and epoch alone, c0's push joined the first rebalance, and the
    second moved 4 from c2 to c1 with the same segments dealt; heard a second apart, they
    are two rebalances, the second dealing fewer."""
    h.register("c0", [0])
    h.register("c1", [2])
    h.register("c2", [])
    h.at(5000).assign("c1", [3])
    h.assign("c2", [4])
    h.at(6000).assign("c0", [3])
    h.assign("c1", [4])
    h.assign("c2", [])
    h.drain()


@case("reassigned-legal-answers-after-the-next-layout")
def _reassigned_legal_late_answers(h: History) -> None:
    """The controller's leader lost its session and every consumer registers again. The
    layout of epoch 2 (segment 0 split into 2 and 3) deals c0 2, c1 3 and c2 1; c2 hears
    its answer, then its push for epoch 3 (1 and 3 merged into 4), before c0 and c1 hear
    their answers for epoch 2. In the order heard, c2's two changes each stood alone with
    the same segments dealt; in the order dealt, each layout changed what is dealt."""
    h.register("c0", [0])
    h.register("c1", [1])
    h.register("c2", [])
    h.nemesis("expire-session")
    for consumer in ("c0", "c1", "c2"):
        h.registering(consumer)
    h.registered("c2", [1], epoch=2)
    h.assign("c2", [], epoch=3)
    h.registered("c0", [2], epoch=2)
    h.registered("c1", [3], epoch=2)
    h.assign("c1", [4], epoch=3)
    h.drain()


@case("reassigned-legal-consumer-left")
def _reassigned_legal_left(h: History) -> None:
    _dealt_to_c0_then_shared(h)
    h.unregister("c1")
    h.assign("c0", [0, 1, 2, 3])
    h.drain()


ZOMBIE_BOUND = {"zombie_broker_bound_ms": 5000}


def _health_each_second(h: History, answers: str, broker: str = "a-broker1") -> None:
    """One reading of `broker` a second, `answers` read as u(nhealthy), h(ealthy),
    d(own), ?(unknown); a healthy a-broker2 read between each."""
    names = {"u": "unhealthy", "h": "healthy", "d": "down", "?": "unknown"}
    for second, answer in enumerate(answers):
        h.at(1000 * (second + 1)).health(broker, names[answer])
        h.health("a-broker2", "healthy")
    h.drain()


@case("zombie-broker", meta=ZOMBIE_BOUND, zombie_broker=1)
def _zombie(h: History) -> None:
    _health_each_second(h, "hhuuuuuuuuh")  # unhealthy from 3 s to 10 s


@case("zombie-broker-unanswered-readings-between", meta=ZOMBIE_BOUND, zombie_broker=1)
def _zombie_unanswered(h: History) -> None:
    """Readings without an answer (a probe timed out) neither break nor extend it."""
    _health_each_second(h, "uu??uu??u")


@case("zombie-broker-legal-shut-down-in-time", meta=ZOMBIE_BOUND)
def _shut_down(h: History) -> None:
    _health_each_second(h, "huuuuuddddd")  # 4 s, then nothing listens


@case("zombie-broker-legal-restarted", meta=ZOMBIE_BOUND)
def _restarted(h: History) -> None:
    """Down between two spells: a new process, starting, is not the old one stuck."""
    _health_each_second(h, "uuuuduuuuh")


@case("zombie-broker-legal-healthy-between", meta=ZOMBIE_BOUND)
def _recovered(h: History) -> None:
    _health_each_second(h, "uuuuhuuuu")


@case("zombie-broker-legal-no-bound")
def _zombie_not_judged(h: History) -> None:
    _health_each_second(h, "u" * 30)


UNDRAINED = ("no-drain", "stalled-subscription-segments-drain-timed-out")
"""Cases whose drain did not complete: the checkers that need one say unknown."""


@pytest.fixture(scope="module")
def results(spark, tmp_path_factory) -> dict[str, dict]:
    histories = prepared_cases({name: build for name, (build, _) in CASES.items()},
                               tmp_path_factory.mktemp("runs"), META)
    return {r.run: r.results for r in check_runs(spark, histories, CheckSettings())}


@pytest.mark.spark
@pytest.mark.parametrize("name", [n for n in CASES if n not in UNDRAINED])
def test_counts(results: dict[str, dict], name: str) -> None:
    expected = CASES[name][1]
    counts = {checker: r["count"] for checker, r in results[name]["checkers"].items()}
    # The checkers with a bound of their own judge only the runs that set it, and only
    # they list them.
    judged = [checker for checker in CHECKER_NAMES
              if checker not in OPTIONAL_BOUNDS or OPTIONAL_BOUNDS[checker] in META[name]]
    assert counts == {checker: expected.get(checker, 0) for checker in judged}
    assert results[name]["valid"] is (not any(expected.values()))


@pytest.mark.spark
def test_acks_judged_are_counted(results: dict[str, dict]) -> None:
    checkers = results["legal"]["checkers"]
    assert checkers["duplicate"]["acks_judged"] == 3
    assert checkers["duplicate-window"]["acks_judged"] == 0
    assert results["duplicate-window"]["checkers"]["duplicate-window"]["acks_judged"] > 0


@pytest.mark.spark
def test_a_producer_retry_is_counted_not_judged(results: dict[str, dict]) -> None:
    stats = results["multi-position-legal-producer-retry"]["stats"]
    assert stats["producer_retries"] == 1
    assert stats["producer_retry_examples"][0]["positions"] == ["1:7", "2:0"]
    assert results["legal"]["stats"]["producer_retries"] == 0
    example = results["multi-position"]["checkers"]["multi-position"]["examples"][0]
    assert example["positions"] == ["1:0", "1:1", "1:2"]


@pytest.mark.spark
def test_pairs_an_unlinked_cluster_never_replicated_are_counted_not_judged(
        results: dict[str, dict]) -> None:
    stats = results["lost-legal-written-while-unlinked"]["stats"]
    assert stats["unreplicated"] == 1
    (example,) = stats["unreplicated_examples"]
    assert (example["value"], example["subscription"]) == ("m1", "late-a")
    assert results["lost-written-long-before-the-unlink"]["stats"]["unreplicated"] == 0
    assert results["legal"]["stats"]["unreplicated"] == 0


@pytest.mark.spark
def test_stall_and_stuck_ack_examples(results: dict[str, dict]) -> None:
    (stall,) = results["stalled-subscription"]["checkers"]["stalled-subscription"]["examples"]
    assert stall["subscription"] == "s" and stall["backlog"] == 5
    assert stall["to_ms"] - stall["from_ms"] > 10000
    (stuck,) = results["ack-unapplied"]["checkers"]["ack-unapplied"]["examples"]
    assert stuck["value"] == "m1" and stuck["positions"] == ["1:0"]
    assert len(stuck["events"]) == 3  # the ack, the delivery, the final reading


@pytest.mark.spark
def test_a_stalled_scalable_subscription_names_its_waiting_segments(
        results: dict[str, dict]) -> None:
    for name in ("stalled-subscription-segments-dealt-to-nobody",
                 "stalled-subscription-segments-drain-timed-out"):
        (stall,) = results[name]["checkers"]["stalled-subscription"]["examples"]
        assert stall["subscription"] == "stream" and stall["backlog"] == 228
        assert stall["segments"] == {"17": 83, "18": 145}
    undrained = results["stalled-subscription-segments-drain-timed-out"]
    assert undrained["checkers"]["lost"]["valid"] == "unknown"
    assert undrained["valid"] is False, "the stall decides the run, the drain or not"


@pytest.mark.spark
def test_examples_name_the_proving_events(results: dict[str, dict]) -> None:
    (example,) = results["duplicate"]["checkers"]["duplicate"]["examples"]
    assert example["value"] == "m1"
    assert len(example["events"]) == 2  # the ack's completion and the second delivery
    assert results["lost"]["checkers"]["lost"]["examples"][0]["value"] == "m2"


@pytest.mark.spark
def test_without_drain_lost_is_unknown_never_true(results: dict[str, dict]) -> None:
    run = results["no-drain"]
    assert run["checkers"]["lost"]["valid"] == "unknown"
    assert run["checkers"]["lost"]["undecided"] == 1  # m1, not yet received
    assert run["valid"] == "unknown"


@pytest.mark.spark
def test_meta_names_scenario_and_seed(results: dict[str, dict]) -> None:
    assert results["order"]["scenario"] == "order"
    assert results["order"]["seed"] == 1


@pytest.mark.spark
def test_nemesis_interval_availability_and_recovery(results: dict[str, dict]) -> None:
    stats = results["nemesis-partition-and-heal"]["stats"]
    (fault,) = stats["nemesis"]
    assert fault["f"] == "partition" and fault["detail"] == {"targets": ["b1"]}
    assert fault["operations"] == {"fail": 1, "info": 1}
    assert fault["availability"] == 0.0
    assert fault["recovery_ms"] == pytest.approx(251, abs=2)  # heal at 5000, ok at ~5251
    assert stats["sends_ok"] == 2 and stats["sends_fail"] == 1 and stats["sends_info"] == 1


@pytest.mark.spark
def test_a_fault_whose_completion_was_never_recorded_still_has_an_interval(
        results: dict[str, dict]) -> None:
    (fault,) = results["nemesis-fault-never-completed"]["stats"]["nemesis"]
    assert fault["f"] == "partition" and fault["availability"] == 1.0


@pytest.mark.spark
def test_a_failover_in_a_wan_cut_is_excused_by_name(results: dict[str, dict]) -> None:
    """An excused failover is named (its index), and its acks are not counted as judged."""
    excused = results["duplicate-window-legal-while-the-wan-is-cut"]["checkers"]
    assert len(excused["duplicate-window"]["failovers_excused"]) == 1
    assert excused["duplicate-window"]["acks_judged"] == 0
    judged = results["duplicate-window-after-the-wan-recovered"]["checkers"]
    assert judged["duplicate-window"]["failovers_excused"] == []
    assert judged["duplicate-window"]["acks_judged"] == 1
    unlinked = results["duplicate-window-legal-while-replication-is-unlinked"]["checkers"]
    assert len(unlinked["duplicate-window"]["failovers_excused"]) == 1


def test_failover_statistics(results: dict[str, dict]) -> None:
    (over,) = results["duplicate-window"]["stats"]["failover_windows"]
    assert over["duplicates"] == 1 and over["window_ms"] == pytest.approx(5000, abs=5)
    (within,) = results["duplicate-window-legal-within-bound"]["stats"]["failover_windows"]
    assert within["window_ms"] == pytest.approx(1000, abs=5) and within["bound_ms"] == 2000


@pytest.mark.spark
def test_an_unavailable_send_names_its_wait_and_what_ended_it(
        results: dict[str, dict]) -> None:
    (waited,) = results["unavailable"]["checkers"]["unavailable"]["examples"]
    assert waited["key"] == "k" and waited["cluster"] == "a" and waited["written"] is True
    assert waited["wait_ms"] == pytest.approx(6001, abs=2) and waited["bound_ms"] == 5000
    assert len(waited["events"]) == 2  # m2's invoke, m4's completion
    (never,) = results["unavailable-never-written-again"]["checkers"]["unavailable"][
        "examples"]
    assert never["written"] is False and never["wait_ms"] == pytest.approx(5501, abs=2)


@pytest.mark.spark
def test_a_zombie_broker_names_the_broker_and_how_long_it_stayed_unable_to_serve(
        results: dict[str, dict]) -> None:
    (zombie,) = results["zombie-broker"]["checkers"]["zombie-broker"]["examples"]
    assert (zombie["broker"], zombie["cluster"], zombie["bound_ms"]) == ("a-broker1", "a", 5000)
    assert zombie["span_ms"] == pytest.approx(7000, abs=5)  # unhealthy from 3 s to 10 s
    assert "zombie-broker" not in results["zombie-broker-legal-no-bound"]["checkers"]
