"""A Python client for PIP-468 scalable topics, on asyncio and our own protocol codec
(impl/protocol): `ScalableProducer`, `StreamConsumer`, `QueueConsumer`. The official
`pulsar-client` refuses `segment://` names (PIP-468 "Client Compatibility"), so segments
are reached through the small binary-protocol client in `connection.py`.
docs/scalable-topics.md ("The client") describes the behaviour.
"""
