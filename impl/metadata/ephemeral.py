"""Claiming an ephemeral node the PIP-57 way: one idiom for bundle ownership and for the
broker's live registration.

PIP-57, "Topic ownership data handling": "if the znode of the bundle exists at Zookeeper
and the owner is this broker, it may be that Zookeeper has not deleted the znode. The broker
should check if the ephemeral owner is the current session ID. If not, the broker should
wait for the znode deletion." A node holding our value is only ours when our *current*
session owns it; a node of an earlier session of ours disappears when that session's
expiry is processed, and whoever then creates the node first owns it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from impl.metadata.errors import AlreadyExists, MetadataError, NotFound
from impl.metadata.store import MetadataStore

log = logging.getLogger(__name__)

_POLL_INTERVAL = 0.1


class StaleNodeRemains(MetadataError):
    """A node of an earlier session of ours did not go away in time; try again later."""

    def __init__(self, path: str, waited: float) -> None:
        super().__init__(f"{path} still held by an earlier session of ours after {waited:.1f} s")
        self.path = path


@dataclass(frozen=True)
class Claim:
    ours: bool
    """True when the node now belongs to our current session (or, with the owner check
    off, merely holds our value)."""
    holder: bytes
    """The value of the node that stands: ours, or the other holder's."""


def claim_ephemeral(
    store: MetadataStore, path: str, value: bytes, *, stale_wait: float, check_owner: bool = True
) -> Claim:
    """Create the ephemeral node at `path` holding `value`, or report who holds it.

    `check_owner=False` is the `reown-without-owner-check` mutant: a node holding our value
    counts as ours whatever session owns it, so the broker serves a bundle whose node
    vanishes as soon as the old session's expiry is processed.
    """
    deadline = time.monotonic() + stale_wait
    while True:
        try:
            store.create(path, value, ephemeral=True)
            return Claim(True, value)
        except AlreadyExists:
            pass
        try:
            node = store.get_node(path)
        except NotFound:
            continue  # deleted between our create and our read: try again
        if node.ephemeral_owner == store.session_id:
            # Ours already (a retried create whose first attempt landed, say).
            return Claim(node.data == value, node.data)
        if node.data != value:
            return Claim(False, node.data)
        if not check_owner:
            return Claim(True, node.data)
        if time.monotonic() >= deadline:
            raise StaleNodeRemains(path, stale_wait)
        log.info("%s holds our value under session 0x%x, not ours (0x%x): waiting for it to go",
                 path, node.ephemeral_owner, store.session_id or 0)
        time.sleep(_POLL_INTERVAL)
