"""Who the brokers are: each broker's identity, its live registration, and the choice of a
broker for a bundle nobody owns.

A broker registers an ephemeral node under `/loadbalance/brokers` for as long as its
session lives (PIP-57, "Broker load data handling": re-registered after a new session), so
the registrations are exactly the brokers a lookup may hand a bundle to. The choice is
rendezvous hashing of (bundle, broker): every broker computes the same candidate from the
same live set, bundles spread evenly, and when a broker dies only its own bundles move.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

import mmh3

from impl.metadata import paths
from impl.metadata.ephemeral import claim_ephemeral
from impl.metadata.errors import NotFound
from impl.metadata.store import MetadataStore
from impl.naming.bundles import NamespaceBundle

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerInfo:
    """A broker as clients reach it: binary protocol URL and admin (web) URL."""

    broker_url: str
    """`pulsar://host:port`"""
    web_url: str
    """`http://host:port`"""

    def owner_json(self) -> bytes:
        """Pulsar's `NamespaceEphemeralData`, the value of a bundle ownership node."""
        return json.dumps({"nativeUrl": self.broker_url, "httpUrl": self.web_url,
                           "disabled": False}, sort_keys=True).encode()

    @classmethod
    def from_owner_json(cls, data: bytes) -> BrokerInfo:
        value = json.loads(data)
        return cls(value["nativeUrl"], value["httpUrl"])

    def registration_json(self) -> bytes:
        """Pulsar's live broker data names (`pulsarServiceUrl`, `webServiceUrl`)."""
        return json.dumps({"pulsarServiceUrl": self.broker_url, "webServiceUrl": self.web_url},
                          sort_keys=True).encode()

    @classmethod
    def from_registration_json(cls, data: bytes) -> BrokerInfo:
        value = json.loads(data)
        return cls(value["pulsarServiceUrl"], value["webServiceUrl"])


def choose_broker(bundle: NamespaceBundle, brokers: Iterable[BrokerInfo]) -> BrokerInfo | None:
    """The broker a free bundle goes to (highest rendezvous weight); None if none is live."""
    return max(brokers, key=lambda b: mmh3.hash(f"{bundle}|{b.broker_url}", signed=False),
               default=None)


class BrokerRegistry:
    """This broker's live registration and the list of everyone's."""

    def __init__(self, store: MetadataStore, me: BrokerInfo, *, stale_wait: float) -> None:
        self._store = store
        self.me = me
        self._stale_wait = stale_wait

    @property
    def path(self) -> str:
        return paths.live_broker(self.me.broker_url)

    def register(self) -> None:
        """Create (or, after a new session, re-create) our registration. A node left by an
        earlier session of ours is waited out (PIP-57), bounded by `stale_wait`."""
        claim_ephemeral(self._store, self.path, self.me.registration_json(),
                        stale_wait=self._stale_wait, check_owner=True)
        log.info("registered live broker %s", self.me.broker_url)

    def unregister(self) -> None:
        try:
            node = self._store.get_node(self.path)
            if node.ephemeral_owner == self._store.session_id:
                self._store.delete(self.path, node.version)
        except NotFound:
            pass

    def live_brokers(self) -> list[BrokerInfo]:
        brokers = []
        try:
            children = self._store.children(paths.LIVE_BROKERS)
        except NotFound:
            return []
        for child in children:
            try:
                data = self._store.get(f"{paths.LIVE_BROKERS}/{child}").data
            except NotFound:
                continue  # went away while we listed
            brokers.append(BrokerInfo.from_registration_json(data))
        return brokers
