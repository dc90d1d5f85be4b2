"""Partitioned topics and pattern (regex) consumers with the official client, over
in-memory ledgers: the broker's PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE answers
make the client spread and gather messages itself. (The admin side, with ZooKeeper, is
in tests/cluster/test_partitioned_topics.py.)"""

from __future__ import annotations

import re

import pulsar

from impl.broker.namespace_topics import topics_hash
from impl.mutants import Mutants
from impl.naming.topic_name import TopicName
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.broker.test_official_client import drain
from tests.cluster.raw_producer import RawConnection
from wire.frames import encode_command
from wire.pulsar_api_pb2 import BaseCommand, CommandGetTopicsOfNamespace

PARTITIONED = "persistent://public/default/spread"


def spread_keys(client: pulsar.Client, broker: MemoryBroker) -> tuple[bool, list[int]]:
    """Produce keyed messages to a 3-partition topic and consume them on one subscription:
    whether every message arrived, and which partitions hold messages."""
    broker.ownership.partitioned[TopicName.parse(PARTITIONED)] = 3
    consumer = client.subscribe(PARTITIONED, "all")
    producer = client.create_producer(PARTITIONED, batching_enabled=False)
    sent = [f"m-{n}".encode() for n in range(60)]
    for n, data in enumerate(sent):
        producer.send(data, partition_key=f"key-{n % 12}")
    complete = sorted(drain(consumer)) == sorted(sent)
    written = broker.ownership.ledgers
    partitions = [TopicName.parse(f"{PARTITIONED}-partition-{n}") for n in range(3)]
    return complete, [n for n, name in enumerate(partitions)
                      if name in written and written[name].entries]


def test_a_partitioned_topic_spreads_keys_over_partitions_and_one_subscription_gets_all(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    complete, used = spread_keys(client, memory_broker)
    assert complete
    assert len(used) > 1, "keys spread over several partitions"
    assert TopicName.parse(PARTITIONED) not in memory_broker.ownership.ledgers


def test_mutant_partition_count_not_reported_leaves_the_partitions_empty() -> None:
    with serving(mutants=Mutants.of(["partition-count-not-reported"])) as broker:
        client = official_client(broker.url)
        complete, used = spread_keys(client, broker)
        client.close()
    assert complete and used == []  # all went to one topic beside the partitions


def test_a_pattern_consumer_gets_the_matching_topics_only(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    memory_broker.ownership.partitioned[TopicName.parse("persistent://public/default/rx-p")] = 2
    names = ["rx-a", "rx-p", "other"]
    producers = {name: client.create_producer(f"persistent://public/default/{name}",
                                              batching_enabled=False) for name in names}
    consumer = client.subscribe(re.compile("persistent://public/default/rx-.*"), "pattern")
    for name, producer in producers.items():
        for n in range(4):
            producer.send(f"{name}-{n}".encode(), partition_key=f"k{n}")
    assert sorted(drain(consumer)) == sorted(f"{name}-{n}".encode()
                                             for name in ("rx-a", "rx-p") for n in range(4))


def test_the_topic_list_is_filtered_and_unchanged_when_the_hash_matches(
        memory_broker: MemoryBroker) -> None:
    memory_broker.ownership.partitioned[TopicName.parse("persistent://public/default/rx-p")] = 2
    raw = RawConnection(memory_broker.url)

    def ask(request_id: int, client_hash: str | None) -> BaseCommand:
        request = CommandGetTopicsOfNamespace(request_id=request_id, namespace="public/default",
                                              topics_pattern="persistent://public/default/rx-.*")
        if client_hash is not None:
            request.topics_hash = client_hash
        raw.send_bytes(encode_command(BaseCommand(type=BaseCommand.GET_TOPICS_OF_NAMESPACE,
                                                  getTopicsOfNamespace=request)))
        (answer,) = raw.collect(1.0)
        return answer

    first = ask(1, None).getTopicsOfNamespaceResponse
    partitions = ["persistent://public/default/rx-p-partition-0",
                  "persistent://public/default/rx-p-partition-1"]
    assert list(first.topics) == partitions and first.filtered and first.changed
    assert first.topics_hash == topics_hash(partitions)
    again = ask(2, first.topics_hash).getTopicsOfNamespaceResponse
    assert list(again.topics) == [] and not again.changed
    raw.close()


def test_the_topics_hash_is_pulsars_crc32c_as_guava_prints_it() -> None:
    # CRC32C's check value: 0xE3069283 for "123456789"; Guava prints its bytes
    # little-endian. Names are sorted, then joined by commas.
    assert topics_hash(["123456789"]) == "839206e3"
    assert topics_hash(["b", "a"]) == topics_hash(["a", "b"]) == topics_hash(["a,b"])
