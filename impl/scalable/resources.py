"""One scalable topic's metadata in the store (PIP-468 `ScalableTopicResources`): the layout,
the pending change, subscriptions and consumer registrations, at PIP-468's paths.

Every write of the layout is a compare-and-set on the node version; the other documents
are written only by the controller leader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.metadata.store import MetadataStore, Node, Watch
from impl.scalable.changes import PendingChange
from impl.scalable.errors import ScalableTopicExists, ScalableTopicNotFound
from impl.scalable.layout import SegmentLayout
from impl.scalable.sessions import ConsumerRegistration, SubscriptionMetadata
from wire.topic_names import ScalableTopicName


class VersionedLayout(NamedTuple):
    layout: SegmentLayout
    version: int
    """What a compare-and-set of the next layout must name."""


class ScalableTopicResources:
    def __init__(self, store: MetadataStore, topic: ScalableTopicName) -> None:
        self._store = store
        self.topic = topic
        names = (topic.tenant, topic.namespace, topic.local_name)
        self.layout_path = paths.scalable_topic(*names)
        self.controller_path = paths.scalable_topic_controller(*names)
        self._pending_path = paths.scalable_topic_pending_change(*names)
        self._subscriptions_path = paths.scalable_topic_subscriptions(*names)
        self._names = names

    # --- layout --------------------------------------------------------------------------

    def create_topic(self, layout: SegmentLayout) -> None:
        try:
            self._store.create(self.layout_path, layout.to_json())
        except AlreadyExists:
            raise ScalableTopicExists(str(self.topic)) from None

    def read_layout(self) -> VersionedLayout:
        try:
            data, version = self._store.get(self.layout_path)
        except NotFound:
            raise ScalableTopicNotFound(str(self.topic)) from None
        return VersionedLayout(SegmentLayout.from_json(data), version)

    def replace_layout(self, layout: SegmentLayout, expected_version: int) -> int:
        """PIP-468 split/merge step 4. Raises the store's `VersionConflict` when another
        writer got in first."""
        return self._store.set(self.layout_path, layout.to_json(), expected_version)

    def delete_topic(self) -> None:
        try:
            self._store.delete(self.layout_path, recursive=True)
        except NotFound:
            pass

    def watch_layout(self, callback: Callable[[SegmentLayout | None], None]) -> Watch:
        """Every layout this topic has from now on (None while it does not exist): what a
        DAG watch session on any broker pushes to its client."""
        def on_node(node: Node | None) -> None:
            callback(None if node is None else SegmentLayout.from_json(node.data))
        return self._store.watch_data(self.layout_path, on_node)

    # --- pending change ------------------------------------------------------------------

    def read_pending_change(self) -> PendingChange | None:
        try:
            return PendingChange.from_bytes(self._store.get(self._pending_path).data)
        except NotFound:
            return None

    def write_pending_change(self, change: PendingChange) -> None:
        try:
            self._store.create(self._pending_path, change.to_bytes())
        except AlreadyExists:
            self._store.set(self._pending_path, change.to_bytes(), -1)

    def clear_pending_change(self) -> None:
        try:
            self._store.delete(self._pending_path)
        except NotFound:
            pass

    # --- subscriptions and consumer sessions --------------------------------------------

    def subscription_names(self) -> list[str]:
        try:
            return [paths.decode(c) for c in self._store.children(self._subscriptions_path)]
        except NotFound:
            return []

    def read_subscription(self, name: str) -> SubscriptionMetadata:
        path = paths.scalable_subscription(*self._names, name)
        return SubscriptionMetadata.from_bytes(self._store.get(path).data)

    def ensure_subscription(self, metadata: SubscriptionMetadata) -> SubscriptionMetadata:
        """Create the subscription's document unless it exists; the stored one wins."""
        try:
            self._store.create(paths.scalable_subscription(*self._names, metadata.name),
                               metadata.to_bytes())
            return metadata
        except AlreadyExists:
            return self.read_subscription(metadata.name)

    def registrations(self, subscription: str) -> list[ConsumerRegistration]:
        parent = paths.subscription_consumers(*self._names, subscription)
        try:
            names = self._store.children(parent)
        except NotFound:
            return []
        found = []
        for name in names:
            try:
                found.append(ConsumerRegistration.from_bytes(
                    self._store.get(f"{parent}/{name}").data))
            except NotFound:
                continue
        return found

    def save_registration(self, subscription: str, registration: ConsumerRegistration) -> None:
        path = paths.consumer_registration(*self._names, subscription,
                                           registration.consumer_name)
        try:
            self._store.set(path, registration.to_bytes(), -1)
        except NotFound:
            self._store.create(path, registration.to_bytes())

    def delete_registration(self, subscription: str, consumer_name: str) -> None:
        try:
            self._store.delete(paths.consumer_registration(*self._names, subscription,
                                                           consumer_name))
        except NotFound:
            pass
