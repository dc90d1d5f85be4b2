"""Settings of replicated subscriptions, with Pulsar's broker defaults."""

from __future__ import annotations

from dataclasses import dataclass


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
