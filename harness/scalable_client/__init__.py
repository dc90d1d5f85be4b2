"""The harness's client for PIP-468 scalable topics, on asyncio and the binary protocol of
`wire/`: `ScalableProducer`, `StreamConsumer`, `QueueConsumer`. The official
`pulsar-client` refuses `segment://` names (PIP-468 "Client Compatibility"), so segments
are reached through `wire.connection`. It reaches the system under test only through the
protocol: its idea of a topic's segments is what the DAG watch session sends (`layout.py`),
and it imports nothing of `impl/`. docs/scalable-topics.md ("The client") describes the
behaviour.
"""
