"""A scalable topic in a real ZooKeeper, with as many controllers (brokers) as a test needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from impl.metadata.store import MetadataStore
from impl.mutants import NONE, Mutants
from impl.scalable.controller import ControllerConfig, ScalableTopicController
from impl.scalable.lifecycle import create_scalable_topic
from impl.scalable.resources import ScalableTopicResources
from tests.scalable.znode_segments import ZnodeSegmentTopics
from wire.topic_names import ScalableTopicName

TOPIC = ScalableTopicName("acme", "orders", "payments")


class ScalableTopicDeployment:
    """One topic; `segments` stands for the brokers that own segment topics (its own
    ZooKeeper session), each controller for one broker with its own session."""

    def __init__(self, connect: Callable[..., MetadataStore], num_segments: int) -> None:
        self._connect = connect
        self.observer = connect()
        self.resources = ScalableTopicResources(self.observer, TOPIC)
        self.segments = ZnodeSegmentTopics(connect(), self.resources.layout_path)
        self.controllers: list[ScalableTopicController] = []
        self.stores: dict[str, MetadataStore] = {}
        """Each controller's metadata session, by broker URL (for faults)."""
        create_scalable_topic(self.resources, self.segments, num_segments)

    def controller(self, broker_url: str, *, mutants: Mutants = NONE,
                   start: bool = True, **config: Any) -> ScalableTopicController:
        """A controller on a broker of its own (its own metadata session)."""
        store = self._connect(session_timeout=4.0)
        controller = ScalableTopicController(
            store, TOPIC, self.segments, self.segments, ControllerConfig(broker_url, **config),
            mutants=mutants)
        self.stores[broker_url] = store
        self.controllers.append(controller)
        if start:
            controller.initialize()
        return controller

    def segment_topic(self, segment_id: int) -> str:
        return TOPIC.segment_topic(self.resources.read_layout().layout.segment(segment_id))

    def close(self) -> None:
        for controller in self.controllers:
            controller.close()


@pytest.fixture
def deploy(zk_store: Callable[..., MetadataStore]
               ) -> Iterator[Callable[[int], ScalableTopicDeployment]]:
    made: list[ScalableTopicDeployment] = []

    def make(num_segments: int = 2) -> ScalableTopicDeployment:
        made.append(ScalableTopicDeployment(zk_store, num_segments))
        return made[-1]

    yield make
    for item in made:
        item.close()
