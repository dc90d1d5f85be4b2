"""PIP-468's `ScalableTopicService`: one per broker, the entry point of every scalable-topic
operation (admin API, DAG watch sessions, consumer registration).

It keeps one `ScalableTopicController` per topic it was asked about, created on demand and
initialised at once, so every broker that has served a topic campaigns for its
controller; when the leader dies one of them takes over without waiting for a request.
Mutations run on the local controller; when it does not lead they fail with `NotLeader`
naming the leader's broker URL, and the admin layer redirects the caller to the leader's
admin URL (`leader_web_url`). Everything here blocks (ZooKeeper, segment requests): the
broker calls it on this service's own threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from impl.metadata import paths
from impl.metadata.errors import NotEmpty, NotFound, VersionConflict
from impl.metadata.store import MetadataStore, Node, Watch
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import NamespaceName
from impl.ownership.brokers import BrokerRegistry
from impl.scalable.admin_segments import AdminSegmentTopics
from impl.scalable.controller import ControllerConfig, ScalableTopicController
from impl.scalable.coordinator import DEFAULT_GRACE_PERIOD
from impl.scalable.errors import (
    InvalidMetadata,
    NotLeader,
    ScalableTopicNotFound,
    SubscriptionNotFound,
)
from impl.scalable.layout import SegmentLayout
from impl.scalable.lifecycle import create_scalable_topic, delete_scalable_topic
from impl.scalable.resources import ScalableTopicResources
from impl.scalable.sessions import SubscriptionType
from wire.topic_names import ScalableTopicName

log = logging.getLogger(__name__)

T = TypeVar("T")

DELETING_PROPERTY = "starquake.deleting"
"""Set in a topic's properties while it is deleted: brokers stop campaigning for it."""


def _deleting(layout: SegmentLayout) -> bool:
    return layout.properties.get(DELETING_PROPERTY) == "true"


@dataclass(frozen=True)
class ScalableTopicsConfig:
    broker_url: str
    admin_url: str
    grace_period: float = DEFAULT_GRACE_PERIOD
    """Seconds a disconnected stream consumer keeps its session (broker flag
    `--scalable-grace-period-seconds`)."""
    leader_wait: float = 10.0
    """How long a request waits for some controller to lead before giving up."""
    admin_token: str | None = None
    """What the controller's Segments API requests present (None: authentication off)."""
    step_pause: float = 0.0
    """`ControllerConfig.step_pause` of every controller here."""


class ScalableTopicService:
    def __init__(self, store: MetadataStore, registry: BrokerRegistry,
                 config: ScalableTopicsConfig, mutants: Mutants = NONE) -> None:
        self._store = store
        self._registry = registry
        self.config = config
        self.mutants = mutants
        self.segments = AdminSegmentTopics(config.admin_url, token=config.admin_token)
        self._controllers: dict[ScalableTopicName, ScalableTopicController] = {}
        self._deletion_watches: dict[ScalableTopicName, Watch] = {}
        self._lock = threading.Lock()
        self.executor = ThreadPoolExecutor(16, thread_name_prefix="scalable")

    def resources(self, topic: ScalableTopicName) -> ScalableTopicResources:
        return ScalableTopicResources(self._store, topic)

    # --- controllers ---------------------------------------------------------------------

    def controller(self, topic: ScalableTopicName) -> ScalableTopicController:
        """PIP-468 `getOrCreateController()`: this broker's controller for `topic`,
        campaigning for leadership. `ScalableTopicNotFound` when the topic does not exist."""
        with self._lock:
            found = self._controllers.get(topic)
        if found is not None:
            return found
        self.layout(topic)  # no controller for a missing topic, or one being deleted
        with self._lock:
            found = self._controllers.get(topic)
            if found is not None:
                return found
            controller = ScalableTopicController(
                self._store, topic, self.segments, self.segments,
                ControllerConfig(self.config.broker_url, grace_period=self.config.grace_period,
                                 step_pause=self.config.step_pause),
                mutants=self.mutants)
            self._controllers[topic] = controller
        try:
            controller.initialize()
        except BaseException:
            with self._lock:
                self._controllers.pop(topic, None)
            controller.close()
            raise
        watch = self._store.watch_data(self.resources(topic).layout_path,
                                       lambda node: self._check_deleted(topic, node))
        with self._lock:
            self._deletion_watches[topic] = watch
        return controller

    def existing_controller(self, topic: ScalableTopicName) -> ScalableTopicController | None:
        with self._lock:
            return self._controllers.get(topic)

    def campaign(self, topic: ScalableTopicName) -> None:
        """Have this broker's controller for `topic` exist and campaign, without waiting
        (a leader's takeover can take as long as a segment owner takes to answer)."""
        def create() -> None:
            try:
                self.controller(topic)
            except ScalableTopicNotFound:
                pass
            except Exception:
                log.exception("controller of %s could not start", topic)
        self.executor.submit(create)

    def release(self, topic: ScalableTopicName) -> None:
        """PIP-468 `releaseController()`: withdraw from the election and forget the topic."""
        with self._lock:
            controller = self._controllers.pop(topic, None)
            watch = self._deletion_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()
        if controller is not None:
            controller.close()

    def _check_deleted(self, topic: ScalableTopicName, node: Node | None) -> None:
        """The topic is being deleted (by any broker): stop campaigning for it. A campaign
        that raced the deletion re-creates the topic's node, empty, as the parent of its
        election node; such a node is never a topic (a topic's node holds its layout), so
        it is removed once this broker's candidate is gone."""
        if node is not None and node.data:
            try:
                if not _deleting(SegmentLayout.from_json(node.data)):
                    return
            except InvalidMetadata:
                return  # not ours to judge; reads report it

        def clean_up() -> None:
            self.release(topic)
            path = self.resources(topic).layout_path
            try:
                if not self._store.get(path).data:
                    self._store.delete(path, recursive=True)
            except NotFound:
                pass
        self.executor.submit(clean_up)

    def close(self) -> None:
        with self._lock:
            controllers, self._controllers = list(self._controllers.values()), {}
            watches, self._deletion_watches = list(self._deletion_watches.values()), {}
        for watch in watches:
            watch.cancel()
        for controller in controllers:
            controller.close()
        self.executor.shutdown(wait=False, cancel_futures=True)

    def as_leader(self, topic: ScalableTopicName,
                  action: Callable[[ScalableTopicController], T]) -> T:
        """Run a mutation on this broker's controller. While nobody leads (a failover in
        progress) wait up to `leader_wait`; `NotLeader` naming the leader otherwise."""
        controller = self.controller(topic)
        deadline = time.monotonic() + self.config.leader_wait
        while True:
            try:
                return action(controller)
            except NotLeader as exc:
                if exc.leader_url is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def leader_web_url(self, broker_url: str) -> str | None:
        """The admin URL of the live broker whose service URL is `broker_url`."""
        for broker in self._registry.live_brokers():
            if broker.broker_url == broker_url:
                return broker.web_url
        return None

    def controller_url(self, topic: ScalableTopicName) -> str | None:
        """The leader's broker URL as stored at the election node (any broker can read it)."""
        try:
            return self._store.get(self.resources(topic).controller_path).data.decode()
        except NotFound:
            return None

    def watch_topic(self, topic: ScalableTopicName, changed: Callable[[], None]) -> list[Watch]:
        """Call `changed()` soon, and after every change of the layout or of the controller
        leader: what a DAG watch session pushes."""
        resources = self.resources(topic)
        return [resources.watch_layout(lambda _layout: changed()),
                self._store.watch_data(resources.controller_path, lambda _node: changed())]

    # --- topic lifecycle -----------------------------------------------------------------

    def list_topics(self, namespace: NamespaceName) -> list[str]:
        parent = paths.namespace_scalable_topics(namespace.tenant, namespace.namespace)
        try:
            names = self._store.children(parent)
        except NotFound:
            return []
        return sorted(str(ScalableTopicName(namespace.tenant, namespace.namespace,
                                            paths.decode(n))) for n in names)

    def create_topic(self, topic: ScalableTopicName, num_segments: int,
                     properties: Mapping[str, str] | None = None) -> SegmentLayout:
        layout = create_scalable_topic(self.resources(topic), self.segments, num_segments,
                                       properties)
        self.controller(topic)  # campaign at once, so the topic has a leader from the start
        return layout

    def delete_topic(self, topic: ScalableTopicName) -> None:
        """Mark the topic as being deleted (every broker then stops campaigning for it),
        then delete its segments and its metadata. A candidate that campaigns before it
        heard of the mark re-creates the election node under the topic; the deletion is
        repeated until no candidate is left."""
        self.release(topic)
        resources = self.resources(topic)
        while True:
            current = resources.read_layout()
            marked = current.layout.with_properties(
                {**current.layout.properties, DELETING_PROPERTY: "true"})
            try:
                resources.replace_layout(marked, current.version)
                break
            except VersionConflict:
                continue
        deadline = time.monotonic() + self.config.leader_wait
        while True:
            try:
                delete_scalable_topic(resources, self.segments)
                return
            except NotEmpty:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def layout(self, topic: ScalableTopicName) -> SegmentLayout:
        """The stored layout; `ScalableTopicNotFound` also while the topic is deleted."""
        layout = self.resources(topic).read_layout().layout
        if _deleting(layout):
            raise ScalableTopicNotFound(str(topic))
        return layout

    # --- subscriptions -------------------------------------------------------------------

    def create_subscription(self, topic: ScalableTopicName, subscription: str,
                            subscription_type: SubscriptionType) -> None:
        self.as_leader(topic, lambda c: c.create_subscription(subscription, subscription_type))

    def delete_subscription(self, topic: ScalableTopicName, subscription: str) -> None:
        """Unregister its consumers, delete its cursor on every segment, then its metadata.
        The controller is re-created afterwards so no coordinator of it stays in memory."""
        resources = self.resources(topic)
        if subscription not in resources.subscription_names():
            raise SubscriptionNotFound(str(topic), subscription)

        def delete(controller: ScalableTopicController) -> None:
            for name in controller.assignments(subscription):
                controller.unregister_consumer(subscription, name)
            for segment in controller.get_layout().segments.values():
                self.segments.delete_subscription(topic.segment_topic(segment), subscription)
            self._store.delete(paths.scalable_subscription(
                topic.tenant, topic.namespace, topic.local_name, subscription), recursive=True)
        self.as_leader(topic, delete)
        self.release(topic)
        self.controller(topic)

    # --- stats ---------------------------------------------------------------------------

    def stats(self, topic: ScalableTopicName) -> dict[str, Any]:
        """Segment counts, per-segment cursor state, per-subscription consumers."""
        resources = self.resources(topic)
        layout = self.layout(topic)
        segments = {}
        for segment in layout.segments.values():
            name = topic.segment_topic(segment)
            try:
                state = self.segments.state(name)
            except Exception as exc:  # one unreachable owner must not hide the rest
                state = {"error": str(exc)}
            segments[str(segment.segment_id)] = {
                "segmentTopic": name, "state": segment.state.value,
                "hashRange": segment.hash_range.to_metadata(), "storage": state}
        subscriptions = {
            name: {"type": resources.read_subscription(name).type.value,
                   "consumers": {r.consumer_name: r.assignment.to_json()
                                 for r in resources.registrations(name)}}
            for name in resources.subscription_names()}
        return {"epoch": layout.epoch, "activeSegments": len(layout.active_segments),
                "totalSegments": len(layout.segments), "segments": segments,
                "subscriptions": subscriptions, "controllerBrokerUrl": self.controller_url(topic)}

