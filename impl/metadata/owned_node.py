"""`OwnedNode`: a node its one owner writes by compare-and-set, across connection losses.

A write that fails with `Unavailable` may have landed all the same: ZooKeeper applied it
and the reply was lost with the connection. The owner's next compare-and-set, made at the
version it still believes in, would then conflict with its own write, and the owner would
take itself for deposed (the store reports the unknown outcome; it cannot resolve it). So
after such a failure the next write first reads the node: when it holds exactly the bytes
last tried, one version on, that write was the owner's own and the version moves on with
it. Anything else is a rival's write, and the compare-and-set conflicts as it should.
"""

from __future__ import annotations

from impl.metadata.errors import Unavailable
from impl.metadata.store import MetadataStore


class OwnedNode:
    """The owner's side of one node: its path, the version it last wrote (or read), and
    the bytes of a write whose outcome is unknown. Calls block (run them off the event
    loop) and must not overlap: callers serialise their writes."""

    def __init__(self, store: MetadataStore, path: str, version: int) -> None:
        self.path = path
        self._store = store
        self._version = version
        self._unsettled: bytes | None = None

    @property
    def version(self) -> int:
        return self._version

    def write(self, data: bytes) -> int:
        """Compare-and-set `data` at the owned version and return the new one. Raises
        `VersionConflict` when someone else wrote, `Unavailable` when the outcome is
        unknown (the next write settles it)."""
        if self._unsettled is not None:
            self._settle(self._unsettled)
        try:
            self._version = self._store.set(self.path, data, self._version)
        except Unavailable:
            self._unsettled = data
            raise
        return self._version

    def _settle(self, tried: bytes) -> None:
        current = self._store.get(self.path)  # Unavailable here leaves it unsettled
        if current.version == self._version + 1 and current.data == tried:
            self._version = current.version
        self._unsettled = None
