"""One cursor snapshot in the making: request, responses, and (beyond two clusters) a second
round (PIP-33, "Snapshot steps")."""

from __future__ import annotations

from collections.abc import Collection

from impl.mutants import NONE, Mutants
from impl.replication.markers import Snapshot, SnapshotRequest, SnapshotResponse
from impl.storage.api import Position


class ReplicatedSubscriptionsSnapshotBuilder:
    """Collects the remote clusters' responses to one snapshot id. Pure: it says what to
    write next and the controller writes it.

    Why two rounds with more than two clusters (PIP-33): a remote cluster's response may
    cover messages it received from a third cluster that have not reached us yet. After a
    second round, every response of which arrives behind those messages, our local position
    (where the last second-round response landed) covers them, while each remote position
    stays the one from the first round.
    """

    def __init__(self, snapshot_id: str, local_cluster: str, remote_clusters: Collection[str],
                 started_at: float, published_position: Position | None,
                 mutants: Mutants = NONE) -> None:
        if not remote_clusters:
            raise ValueError(f"snapshot {snapshot_id}: no remote cluster to ask")
        self.snapshot_id = snapshot_id
        self.local_cluster = local_cluster
        self.remote_clusters = frozenset(remote_clusters)
        self.started_at = started_at
        """Clock seconds when the first request was written (timeouts)."""
        self.published_position = published_position
        """The topic's last published position when the snapshot started: once it is
        complete, nothing up to here needs another snapshot."""
        self._mutants = mutants
        self.rounds = 1 if len(self.remote_clusters) == 1 or mutants.on("single-round") else 2
        self.round = 1
        self._missing = set(self.remote_clusters)
        self._positions: dict[str, Position] = {}

    def request(self) -> SnapshotRequest:
        """The marker that starts a round (both rounds send the same id)."""
        return SnapshotRequest(self.snapshot_id, self.local_cluster)

    def receive_response(self, response: SnapshotResponse,
                         position: Position) -> SnapshotRequest | Snapshot | None:
        """Record a remote cluster's response, stored here at `position`. Returns the
        request starting the second round, the finished snapshot, or None while responses
        are missing."""
        if response.snapshot_id != self.snapshot_id or response.cluster not in self._missing:
            return None  # another snapshot's, a stranger's, or a repeat within the round
        self._positions.setdefault(response.cluster, response.position)  # 1st round's wins
        self._missing.discard(response.cluster)
        if self._mutants.on("partial-snapshot"):  # done at the first response, any round
            self._missing.clear()
            return self._finish(position)
        if self._missing:
            return None
        if self.round < self.rounds:
            self.round += 1
            self._missing = set(self.remote_clusters)
            return self.request()
        return self._finish(position)

    def _finish(self, position: Position) -> Snapshot:
        return Snapshot(self.snapshot_id, position, dict(self._positions), self.local_cluster)
