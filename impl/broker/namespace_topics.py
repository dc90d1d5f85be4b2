"""GET_TOPICS_OF_NAMESPACE: the list a pattern (regex) consumer subscribes from, as Pulsar's
`ServerCnx` answers it.

The list holds partitions, not partitioned topics (a client folds `t-partition-<i>` back
into `t` itself). With a pattern, the broker filters for the client: a name matches when
the pattern, both without their `persistent://` scheme, matches the whole name of the
topic it belongs to. The hash lets a client that polls again learn "nothing changed"
without the list: Pulsar's CRC32C of the sorted names joined by commas, printed as Guava
prints a 32-bit hash (its bytes little-endian, in hex), so a Java client's own hash of
the same list agrees.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import google_crc32c

from impl.naming.topic_name import TopicName

log = logging.getLogger(__name__)

MAX_PATTERN_LENGTH = 50
"""Longer patterns are not evaluated here; the client filters (Pulsar's
`subscriptionPatternMaxLength`)."""
SCHEME = "://"


@dataclass(frozen=True)
class TopicList:
    topics: list[str]
    filtered: bool
    topics_hash: str
    changed: bool


def topics_hash(topics: list[str]) -> str:
    crc: int = google_crc32c.value(",".join(sorted(topics)).encode())
    return crc.to_bytes(4, "little").hex()


def _without_scheme(text: str) -> str:
    return text.partition(SCHEME)[2] if SCHEME in text else text


def _compiled(pattern: str) -> re.Pattern[str] | None:
    """None when the pattern is not for us to evaluate (too long, or not a regex Python
    understands): the client gets every topic and filters itself."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return None
    try:
        return re.compile(_without_scheme(pattern))
    except re.error as exc:
        log.info("not filtering by topics pattern %r: %s", pattern, exc)
        return None


def topic_list(topics: list[str], pattern: str | None, client_hash: str | None) -> TopicList:
    compiled = _compiled(pattern) if pattern else None
    if compiled is not None:
        topics = [t for t in topics
                  if compiled.fullmatch(_without_scheme(str(TopicName.parse(t)
                                                             .partitioned_topic)))]
    digest = topics_hash(topics)
    unchanged = client_hash == digest
    return TopicList([] if unchanged else sorted(topics), compiled is not None, digest,
                     not unchanged)
