"""The replicated-subscription timers reach the brokers a run starts: a container's broker
command parses back to the settings its scenario gave."""

from __future__ import annotations

from harness.targets.docker.images import NodeImage
from harness.targets.docker.node_specs import NodeSettings, broker_spec
from impl.broker.config import parse_args
from impl.replication.config import GeoReplicationConfig, ReplicatedSubscriptionsConfig


def _replication(settings: NodeSettings) -> GeoReplicationConfig:
    spec = broker_spec(NodeImage("image", "import", "python3", "java"), "a", "zk:2181",
                       "10.0.0.2", "reconnect", settings)
    return parse_args(list(spec.command[3:])).replication


def test_pulsars_defaults_unless_the_scenario_says() -> None:
    replication = _replication(NodeSettings())
    assert replication.keepalive_s == 30.0
    assert replication.subscriptions == ReplicatedSubscriptionsConfig()


def test_a_shorter_keepalive_and_snapshot_timeout_reach_the_broker() -> None:
    replication = _replication(NodeSettings(replication_keepalive_s=2.0, snapshot_timeout_s=4.0))
    assert replication.keepalive_s == 2.0
    assert replication.subscriptions.snapshot_timeout_s == 4.0
