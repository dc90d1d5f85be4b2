"""Creating and deleting a scalable topic (PIP-468 "Scalable Topic Lifecycle").

Creation writes the epoch-0 metadata first and then the segment topics: no subscription
exists yet, so a producer that finds a segment before its topic exists loses nothing, it
only waits. Deletion removes the segment topics first (best effort, as in PIP-468) and the
metadata last, so a failed deletion can be repeated.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from impl.scalable.layout import SegmentLayout
from impl.scalable.resources import ScalableTopicResources
from impl.scalable.segment_topics import SegmentTopics

log = logging.getLogger(__name__)


def create_scalable_topic(resources: ScalableTopicResources, segment_topics: SegmentTopics,
                          num_segments: int, properties: Mapping[str, str] | None = None
                          ) -> SegmentLayout:
    """Raises `ScalableTopicExists` when the topic is already there."""
    layout = SegmentLayout.initial(num_segments, properties)
    resources.create_topic(layout)
    for segment in layout.active_segments:
        segment_topics.create(resources.topic.segment_topic(segment), [])
    return layout


def delete_scalable_topic(resources: ScalableTopicResources, segment_topics: SegmentTopics
                          ) -> None:
    """Raises `ScalableTopicNotFound` when there is no such topic. The controllers of the
    topic must be closed first (PIP-468: `releaseController`)."""
    layout = resources.read_layout().layout
    for segment in layout.segments.values():
        topic = resources.topic.segment_topic(segment)
        try:
            segment_topics.delete(topic)
        except Exception:
            log.exception("could not delete segment topic %s; continuing", topic)
    resources.delete_topic()
