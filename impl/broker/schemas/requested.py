"""What GET_SCHEMA asks for: a topic's schema at a version, or its latest."""

from __future__ import annotations

from impl.broker.errors import IncompatibleSchema, NoSchema
from impl.broker.schemas.registry import VERSION_BYTES, SchemaRegistry, version_bytes, version_of
from impl.naming.topic_name import TopicName
from wire.pulsar_api_pb2 import CommandGetSchema, Schema


async def requested_schema(registry: SchemaRegistry,
                           request: CommandGetSchema) -> tuple[Schema, bytes]:
    """The schema, named `tenant/ns/topic` as Pulsar names it, and its version. `NoSchema`
    when the topic has no schema or not that version; a version that is not 8 bytes is
    refused as Pulsar refuses an empty one (`IncompatibleSchema`)."""
    topic = TopicName.parse(request.topic)
    version = None
    if request.HasField("schema_version"):
        if len(request.schema_version) != VERSION_BYTES:
            raise IncompatibleSchema(f"a schema version is {VERSION_BYTES} bytes")
        version = version_of(request.schema_version)
    found = await registry.get(topic, version)
    if found is None or found.schema is None:
        raise NoSchema(f"topic {topic} not found or without that schema")
    name = f"{topic.tenant}/{topic.namespace}/{topic.local_name}"
    return found.schema.to_proto(name), version_bytes(found.version)
