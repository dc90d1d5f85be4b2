"""The schema checks of PRODUCER and SUBSCRIBE, with Pulsar's defaults
(`isAllowAutoUpdateSchema` on, `schemaValidationEnforced` off).

A producer's schema is registered, or given its existing version, or refused with
IncompatibleSchema; a producer without one is let in on any topic. A consumer's schema is
registered only on an idle topic (no schema, no producers, no consumers, nothing written);
otherwise it must read what the topic's schema wrote, and a topic with data or clients but
no schema has nothing to check it against, so it is refused.
"""

from __future__ import annotations

from impl.broker.schemas.compatibility import SchemaData
from impl.broker.schemas.registry import SchemaRegistry, version_bytes
from impl.broker.topic import Topic
from impl.naming.topic_name import TopicName


async def producer_schema_version(registry: SchemaRegistry, topic: TopicName,
                                  schema: SchemaData | None) -> bytes | None:
    """The schema version the producer's messages carry (None without a schema)."""
    if schema is None:
        return None
    return version_bytes(await registry.put_if_absent(topic, schema))


async def admit_consumer(registry: SchemaRegistry, topic: Topic,
                         schema: SchemaData | None) -> None:
    if schema is None:
        return
    idle = (not topic.producers and topic.ledger.last_confirmed is None
            and not any(s.consumers for s in topic.subscriptions.values()))
    if idle and not await registry.history(topic.name):
        await registry.put_if_absent(topic.name, schema)
    else:
        await registry.check_consumer(topic.name, schema)
