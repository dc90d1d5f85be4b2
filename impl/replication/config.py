"""Settings of replicated subscriptions, with Pulsar's broker defaults."""

from __future__ import annotations

from dataclasses import dataclass

from wire.keep_alive import KEEPALIVE_S


class InvalidReplicationConfig(ValueError):
    """A setting outside its range; the message names the setting and the value."""


@dataclass(frozen=True)
class ReplicatedSubscriptionsConfig:
    snapshot_frequency_ms: int = 1000
    """Pulsar's `replicatedSubscriptionsSnapshotFrequencyMillis`: how often a topic tries to
    start a snapshot. PIP-33: about this much of duplicates after a failover."""
    snapshot_timeout_s: float = 30.0
    """Pulsar's `replicatedSubscriptionsSnapshotTimeoutSeconds`: a snapshot still missing a
    response this long after it started is abandoned."""
    max_cached_snapshots_per_subscription: int = 10
    """Pulsar's `replicatedSubscriptionsSnapshotMaxCachedPerSubscription`."""
    replicate_individually_deleted: bool = False
    """Our extension (document 003): updates also carry the messages acknowledged out of
    order, so the other clusters skip them after a failover. Off means plain PIP-33."""
    max_acknowledged_ranges: int = 1000
    """With the extension on: at most this many ranges per update; the ranges nearest the
    mark-delete position are kept, since a failed-over consumer meets those first."""

    def __post_init__(self) -> None:
        for name in ("snapshot_frequency_ms", "snapshot_timeout_s",
                     "max_cached_snapshots_per_subscription", "max_acknowledged_ranges"):
            value = getattr(self, name)
            if value <= 0:
                raise InvalidReplicationConfig(f"{name} must be positive, not {value}")


@dataclass(frozen=True)
class GeoReplicationConfig:
    """A broker's geo-replication settings: its replicators and its replicated
    subscriptions (`python -m impl.broker` flags, docs/geo-replication.md)."""

    enable_replicated_subscriptions: bool = True
    """Pulsar's `enableReplicatedSubscriptions`: off, SUBSCRIBE's
    `replicate_subscription_state` is ignored and no controller runs."""
    subscriptions: ReplicatedSubscriptionsConfig = ReplicatedSubscriptionsConfig()
    read_batch: int = 100
    """Entries a replicator reads and sends at most before waiting for their receipts."""
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    """A replicator that lost its remote retries after `backoff_initial_s`, doubling up to
    this bound (Pulsar's replicator backoff, shortened for test runs)."""
    connect_timeout_s: float = 5.0
    keepalive_s: float = KEEPALIVE_S
    """The replicator's connection to a remote broker pings after this much silence and
    is given up after twice that (Pulsar's client `keepAliveIntervalSeconds`). Until then
    a WAN cut that drops packets leaves the replicator looking connected, and snapshots
    keep starting."""

    def __post_init__(self) -> None:
        for name in ("read_batch", "backoff_initial_s", "backoff_max_s", "connect_timeout_s",
                     "keepalive_s"):
            value = getattr(self, name)
            if value <= 0:
                raise InvalidReplicationConfig(f"{name} must be positive, not {value}")
        if self.backoff_initial_s > self.backoff_max_s:
            raise InvalidReplicationConfig(
                f"backoff_initial_s {self.backoff_initial_s} exceeds backoff_max_s "
                f"{self.backoff_max_s}")
