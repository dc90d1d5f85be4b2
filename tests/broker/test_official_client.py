"""The front end's dispatch logic with the official client, over in-memory ledgers."""

from __future__ import annotations

import pulsar

from impl.naming.topic_name import TopicName
from tests.broker.conftest import MemoryBroker
from tests.cluster.raw_producer import RawConsumer
from tests.fixtures.receiving import until_quiet
from wire.pulsar_api_pb2 import BaseCommand

TOPIC = "persistent://public/default/unit"


def produce(client: pulsar.Client, count: int, *, batching: bool = True,
            keys: int = 0) -> list[bytes]:
    producer = client.create_producer(TOPIC, batching_enabled=batching,
                                      batching_max_publish_delay_ms=5, block_if_queue_full=True)
    sent = []
    for n in range(count):
        data = f"m-{n}".encode()
        sent.append(data)
        producer.send_async(data, None, partition_key=f"k{n % keys}" if keys else None)
    producer.flush()
    producer.close()
    return sent


def drain(consumer: pulsar.Consumer, ack: bool = True, timeout_ms: int = 1500) -> list[bytes]:
    got = []
    for message in until_quiet(consumer, timeout_ms):
        got.append(message.data())
        if ack:
            consumer.acknowledge(message)
    return got


def test_batched_messages_arrive_in_order_and_acks_empty_the_backlog(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest)
    sent = produce(client, 2000)
    assert len(memory_broker.ledger(TOPIC).entries) < 2000  # batches stored whole
    assert drain(consumer) == sent
    consumer.close()
    assert memory_broker.backlog(TOPIC, "sub") == 0


def test_exclusive_subscription_refuses_a_second_consumer(client: pulsar.Client) -> None:
    client.subscribe(TOPIC, "only", consumer_type=pulsar.ConsumerType.Exclusive)
    try:
        client.subscribe(TOPIC, "only", consumer_type=pulsar.ConsumerType.Exclusive)
        raise AssertionError("a second exclusive consumer was accepted")
    except pulsar.ConsumerBusy:
        pass


def test_shared_consumers_split_the_messages_without_duplicates(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumers = [client.subscribe(TOPIC, "shared", consumer_type=pulsar.ConsumerType.Shared,
                                  receiver_queue_size=10, consumer_name=f"c{n}")
                 for n in range(2)]
    sent = produce(client, 200, batching=False)
    got = [drain(c, timeout_ms=500) for c in consumers]
    got = [drain(c, timeout_ms=500) + g for c, g in zip(consumers, got)]
    assert all(got), "both consumers get a share"
    assert sorted(got[0] + got[1]) == sorted(sent)
    assert memory_broker.backlog(TOPIC, "shared") == 0


def test_failover_gives_everything_to_one_consumer_then_to_the_next(
        client: pulsar.Client) -> None:
    first = client.subscribe(TOPIC, "fo", consumer_type=pulsar.ConsumerType.Failover,
                             consumer_name="a")
    second = client.subscribe(TOPIC, "fo", consumer_type=pulsar.ConsumerType.Failover,
                              consumer_name="b")
    sent = produce(client, 100, batching=False)
    assert drain(first, timeout_ms=1000) == sent
    assert drain(second, timeout_ms=300) == []
    first.close()
    more = produce(client, 50, batching=False)
    assert drain(second, timeout_ms=1000) == more


def test_key_shared_keeps_each_key_on_one_consumer_in_order(client: pulsar.Client) -> None:
    consumers = [client.subscribe(TOPIC, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                  consumer_name=f"c{n}") for n in range(3)]
    producer = client.create_producer(TOPIC, batching_enabled=False, block_if_queue_full=True)
    for n in range(300):
        producer.send_async(f"{n}".encode(), None, partition_key=f"k{n % 12}")
    producer.flush()
    keys_of: dict[str, set[int]] = {}
    for index, consumer in enumerate(consumers):
        order: dict[str, list[int]] = {}
        for message in until_quiet(consumer, 800):
            order.setdefault(message.partition_key(), []).append(int(message.data()))
            keys_of.setdefault(message.partition_key(), set()).add(index)
            consumer.acknowledge(message)
        assert all(values == sorted(values) for values in order.values())
    assert len(keys_of) == 12 and all(len(owners) == 1 for owners in keys_of.values())
    assert len({next(iter(o)) for o in keys_of.values()}) > 1, "keys spread over consumers"


def test_negative_ack_redelivers_with_a_redelivery_count(client: pulsar.Client) -> None:
    consumer = client.subscribe(TOPIC, "nack", negative_ack_redelivery_delay_ms=100)
    produce(client, 3, batching=False)
    first = consumer.receive(timeout_millis=2000)
    consumer.negative_acknowledge(first)
    seen = [consumer.receive(timeout_millis=2000) for _ in range(3)]
    again = [m for m in seen if m.data() == first.data()]
    assert again and again[0].redelivery_count() == 1


def test_cumulative_ack_acknowledges_everything_before(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "cumulative")
    produce(client, 50, batching=False)
    messages = [consumer.receive(timeout_millis=2000) for _ in range(50)]
    consumer.acknowledge_cumulative(messages[29])
    consumer.close()
    assert memory_broker.backlog(TOPIC, "cumulative") == 20
    again = client.subscribe(TOPIC, "cumulative")
    assert drain(again)[0] == messages[30].data()


def test_a_batch_leaves_the_backlog_only_when_all_its_messages_are_acked(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "batch", batch_index_ack_enabled=True)
    sent = produce(client, 10, batching=True)
    assert len(memory_broker.ledger(TOPIC).entries) == 1
    messages = [consumer.receive(timeout_millis=2000) for _ in sent]
    for message in messages[:9]:
        consumer.acknowledge(message)
    consumer.close()
    assert memory_broker.backlog(TOPIC, "batch") == 1
    again = client.subscribe(TOPIC, "batch", batch_index_ack_enabled=True)
    assert drain(again) == sent[9:]
    assert memory_broker.backlog(TOPIC, "batch") == 0


def test_unloading_closes_clients_and_they_come_back(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "moves")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    producer.send(b"before")
    memory_broker.run(memory_broker.ownership.unload_topic(TopicName.parse(TOPIC)))
    producer.send(b"after")  # re-created by the client after CLOSE_PRODUCER
    assert drain(consumer) == [b"before", b"after"]


def test_a_terminated_topic_refuses_writes_and_tells_consumers_the_end(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "end")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    producer.send(b"last")
    memory_broker.run(memory_broker.ledger(TOPIC).terminate())
    try:
        producer.send(b"too late")
        raise AssertionError("a terminated topic took a write")
    except pulsar.TopicTerminated:
        pass
    assert drain(consumer) == [b"last"]
    raw = RawConsumer(memory_broker.url, TOPIC, "raw-end")
    raw.flow(10)
    kinds = [c.type for c in raw.collect(1.0)]
    assert kinds == [BaseCommand.MESSAGE, BaseCommand.REACHED_END_OF_TOPIC]
    raw.close()


def test_cumulative_ack_inside_the_first_batch_acknowledges_nothing_of_it(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "partial")
    sent = produce(client, 100)
    assert len(memory_broker.ledger(TOPIC).entries) == 1
    messages = [consumer.receive(timeout_millis=2000) for _ in sent]
    consumer.acknowledge_cumulative(messages[59])  # the client sends `ledger:-1`
    consumer.close()
    assert memory_broker.backlog(TOPIC, "partial") == 1


def test_a_shared_consumers_unacknowledged_messages_go_to_the_others_when_it_leaves(
        client: pulsar.Client) -> None:
    leaving = client.subscribe(TOPIC, "handover", consumer_type=pulsar.ConsumerType.Shared,
                               consumer_name="leaving")
    sent = produce(client, 20, batching=False)
    held = drain(leaving, ack=False, timeout_ms=500)
    assert sorted(held) == sorted(sent)
    staying = client.subscribe(TOPIC, "handover", consumer_type=pulsar.ConsumerType.Shared,
                               consumer_name="staying")
    leaving.close()
    again = []
    for message in until_quiet(staying, 1500):
        again.append((message.data(), message.redelivery_count()))
        staying.acknowledge(message)
    assert sorted(again) == sorted((data, 1) for data in sent)


def test_key_shared_holds_a_moved_key_until_its_earlier_messages_are_acknowledged(
        client: pulsar.Client) -> None:
    def keyed(consumer: pulsar.Consumer, ack: bool) -> list[pulsar.Message]:
        got = []
        for message in until_quiet(consumer, 700):
            got.append(message)
            if ack:
                consumer.acknowledge(message)
        return got

    first = client.subscribe(TOPIC, "moving-keys", consumer_type=pulsar.ConsumerType.KeyShared,
                             consumer_name="first")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    for n in range(40):
        producer.send(f"{n}".encode(), partition_key=f"k{n % 8}")
    held = keyed(first, ack=False)
    assert len(held) == 40
    second = client.subscribe(TOPIC, "moving-keys", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name="second")
    for n in range(40, 80):
        producer.send(f"{n}".encode(), partition_key=f"k{n % 8}")
    assert keyed(second, ack=True) == [], "a moved key overtook its unacknowledged messages"
    for message in held:
        first.acknowledge(message)
    later = {"first": keyed(first, ack=True), "second": keyed(second, ack=True)}
    assert later["second"], "some keys moved to the new consumer"
    assert sorted(int(m.data()) for m in later["first"] + later["second"]) == list(range(40, 80))
    for messages in later.values():
        for key in {m.partition_key() for m in messages}:
            order = [int(m.data()) for m in messages if m.partition_key() == key]
            assert order == sorted(order)


def test_unsubscribing_deletes_the_subscription(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "gone")
    produce(client, 5, batching=False)
    consumer.unsubscribe()
    assert "gone" not in memory_broker.ledger(TOPIC).cursors()
    again = client.subscribe(TOPIC, "gone")  # a new subscription, at the latest position
    later = produce(client, 2, batching=False)
    assert drain(again) == later


def test_a_consumer_can_ask_for_the_last_message_id(client: pulsar.Client) -> None:
    consumer = client.subscribe(TOPIC, "last")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    producer.send(b"first")
    written = producer.send(b"second")
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (written.ledger_id(), written.entry_id())
