"""The geo drain's reading of what each replicator has left, in the shape Apache Pulsar 4.0
answers a topic's stats with (`ReplicatorStats`: `replicationBacklog`, no `msgBacklog`)."""

from __future__ import annotations

from harness.workloads.geo import replication_backlogs_of

PULSAR_STATS = {"msgInCounter": 849, "replication": {"b": {
    "msgRateIn": 0.0, "msgRateOut": 0.0, "replicationBacklog": 243, "connected": False,
    "replicationDelayInSeconds": 14, "outboundConnection": "", "outboundConnectedSince": ""}}}


def test_a_replicator_waiting_for_its_remote_has_a_backlog() -> None:
    assert replication_backlogs_of(PULSAR_STATS) == {"b": 243}


def test_no_replication_nothing_left() -> None:
    assert replication_backlogs_of({"msgInCounter": 3}) == {}
