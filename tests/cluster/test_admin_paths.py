"""The admin paths a Pulsar user calls on a topic's subscriptions, a namespace's and a
topic's policies, and `/metrics`, each asked as plain HTTP of a real broker, with the
official client producing and consuming where the effect shows: a skip or an expiry
moves what the next consumer gets, a reset redelivers to the consumer already connected, a
peek leaves the backlog as it was, a repeated sequence id is stored once where
deduplication is on."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import Answer, backlog, call, drain, module_cluster, owner_of

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]

NAMESPACE_PATH = "/admin/v2/namespaces/public/default"


cluster = module_cluster("admin-paths", brokers=1)


@pytest.fixture
def client(cluster: LocalCluster,
           pulsar_client: Callable[..., pulsar.Client]) -> pulsar.Client:
    return pulsar_client(cluster.service_urls[0])


@pytest.fixture
def admin(cluster: LocalCluster) -> Callable[..., Answer]:
    def ask(method: str, path: str, body: Any = None) -> Answer:
        return call(cluster.brokers[0].admin_url, method, path, body)
    return ask


def names(topic: str) -> tuple[str, str]:
    """The topic's full name and its admin path."""
    return f"persistent://public/default/{topic}", f"/admin/v2/persistent/public/default/{topic}"


def produce(client: pulsar.Client, topic: str, count: int, first: int = 0,
            **properties: str) -> list[pulsar.MessageId]:
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{n}".encode(), properties=properties)
           for n in range(first, first + count)]
    producer.close()
    return ids


def id_body(message_id: pulsar.MessageId, **extra: Any) -> dict[str, Any]:
    return {"ledgerId": message_id.ledger_id(), "entryId": message_id.entry_id(), **extra}


def datas(messages: list[pulsar.Message]) -> list[bytes]:
    return [m.data() for m in messages]


def subscribe(client: pulsar.Client, topic: str, name: str = "sub") -> pulsar.Consumer:
    return client.subscribe(topic, name, initial_position=pulsar.InitialPosition.Earliest)


# --- topics -------------------------------------------------------------------------------


def test_subscriptions_lists_the_client_s_and_the_admin_s(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("listed")
    subscribe(client, topic, "from-client")
    assert admin("PUT", f"{path}/subscription/from-admin").status == 204
    answer = admin("GET", f"{path}/subscriptions")
    assert (answer.status, answer.json()) == (200, ["from-admin", "from-client"])
    assert admin("GET", "/admin/v2/persistent/public/default/nowhere/subscriptions").status == 404


def test_last_message_id_of_an_empty_and_a_written_topic(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("last-id")
    assert admin("PUT", path).status == 204
    assert admin("GET", f"{path}/lastMessageId").json() == {
        "ledgerId": -1, "entryId": -1, "partitionIndex": -1, "batchIndex": -1}
    last = produce(client, topic, 3)[-1]
    answer = admin("GET", f"{path}/lastMessageId")
    assert answer.status == 200
    assert (answer.json()["ledgerId"], answer.json()["entryId"]) == (last.ledger_id(),
                                                                     last.entry_id())


# --- one subscription ---------------------------------------------------------------------


def test_create_subscription_at_a_message_id_or_the_earliest(
        cluster: LocalCluster, client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("created")
    ids = produce(client, topic, 5)
    assert admin("PUT", f"{path}/subscription/from-two", id_body(ids[2])).status == 204
    assert admin("PUT", f"{path}/subscription/after-two",
                 id_body(ids[2], isExcluded=True)).status == 204
    assert admin("PUT", f"{path}/subscription/whole").status == 204
    assert admin("PUT", f"{path}/subscription/whole").status == 409
    assert backlog(cluster.brokers[0].admin_url, topic, "whole") == 5
    assert datas(drain(subscribe(client, topic, "from-two"), idle_ms=1000)) == [
        b"m2", b"m3", b"m4"]
    assert datas(drain(subscribe(client, topic, "after-two"), idle_ms=1000)) == [b"m3", b"m4"]


def test_delete_subscription_is_refused_while_consumers_are_connected_unless_forced(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("deleted")
    subscribe(client, topic, "busy")
    assert admin("PUT", f"{path}/subscription/idle").status == 204
    refused = admin("DELETE", f"{path}/subscription/busy")
    assert refused.status == 412 and "consumers" in refused.json()["reason"]
    assert admin("DELETE", f"{path}/subscription/busy?force=true").status == 204
    assert admin("DELETE", f"{path}/subscription/idle").status == 204
    assert admin("DELETE", f"{path}/subscription/never").status == 404
    assert "idle" not in admin("GET", f"{path}/subscriptions").json()


def test_peek_answers_the_nth_message_with_its_headers_and_leaves_the_backlog(
        cluster: LocalCluster, client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("peeked")
    ids = produce(client, topic, 3, colour="blue")
    assert admin("PUT", f"{path}/subscription/sub").status == 204
    answer = admin("GET", f"{path}/subscription/sub/position/2")
    assert answer.status == 200 and answer.body == b"m1"
    assert answer.headers["X-Pulsar-Message-ID"] == f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    assert answer.headers["X-Pulsar-PROPERTY-colour"] == "blue"
    assert answer.headers["X-Pulsar-sequence-id"] == "1"
    assert answer.headers["X-Pulsar-publish-time"].endswith("Z")
    assert backlog(cluster.brokers[0].admin_url, topic, "sub") == 3
    assert admin("GET", f"{path}/subscription/sub/position/4").status == 404
    assert admin("GET", f"{path}/subscription/other/position/1").status == 404


def test_skip_then_the_consumer_receives_from_after_the_skipped_ones(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("skipped")
    produce(client, topic, 5)
    assert admin("PUT", f"{path}/subscription/sub").status == 204
    assert admin("POST", f"{path}/subscription/sub/skip/2").status == 204
    assert datas(drain(subscribe(client, topic), idle_ms=1000)) == [b"m2", b"m3", b"m4"]


def test_skip_all_clears_the_backlog(cluster: LocalCluster, client: pulsar.Client,
                                     admin: Callable[..., Answer]) -> None:
    topic, path = names("cleared")
    produce(client, topic, 4)
    assert admin("PUT", f"{path}/subscription/sub").status == 204
    assert admin("POST", f"{path}/subscription/sub/skip_all").status == 204
    assert backlog(cluster.brokers[0].admin_url, topic, "sub") == 0
    consumer = subscribe(client, topic)
    produce(client, topic, 1, first=4)
    assert datas(drain(consumer, idle_ms=1000)) == [b"m4"]


def test_reset_cursor_to_a_message_id_redelivers_to_the_connected_consumer(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("reset-by-id")
    ids = produce(client, topic, 5)
    consumer = subscribe(client, topic)
    assert len(drain(consumer, idle_ms=1000)) == 5
    assert admin("POST", f"{path}/subscription/sub/resetcursor", id_body(ids[1])).status == 204
    assert datas(drain(consumer, idle_ms=1000)) == [b"m1", b"m2", b"m3", b"m4"]


def test_reset_cursor_to_a_time_redelivers_what_was_published_since(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("reset-by-time")
    produce(client, topic, 3)
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    produce(client, topic, 3, first=3)
    consumer = subscribe(client, topic)
    assert len(drain(consumer, idle_ms=1000)) == 6
    assert admin("POST", f"{path}/subscription/sub/resetcursor/{boundary}").status == 204
    assert datas(drain(consumer, idle_ms=1000)) == [b"m3", b"m4", b"m5"]


def test_expire_messages_acknowledges_the_old_ones(
        cluster: LocalCluster, client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("expired")
    produce(client, topic, 3)
    assert admin("PUT", f"{path}/subscription/sub").status == 204
    time.sleep(1.5)
    produce(client, topic, 2, first=3)
    assert admin("POST", f"{path}/subscription/sub/expireMessages/1").status == 204
    assert backlog(cluster.brokers[0].admin_url, topic, "sub") == 2
    assert datas(drain(subscribe(client, topic), idle_ms=1000)) == [b"m3", b"m4"]


def test_expire_messages_of_all_subscriptions(
        cluster: LocalCluster, client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("all-expired")
    produce(client, topic, 3)
    for name in ("one", "two"):
        assert admin("PUT", f"{path}/subscription/{name}").status == 204
    assert admin("POST", f"{path}/all_subscription/expireMessages/0").status == 204
    assert [backlog(cluster.brokers[0].admin_url, topic, n) for n in ("one", "two")] == [0, 0]


# --- namespace policies -------------------------------------------------------------------


def test_message_ttl_get_set_remove(admin: Callable[..., Answer]) -> None:
    ttl = f"{NAMESPACE_PATH}/messageTTL"
    assert admin("GET", ttl).status == 204  # not set
    assert admin("POST", ttl, 120).status == 204
    assert admin("GET", ttl).json() == 120
    assert admin("GET", NAMESPACE_PATH).json()["message_ttl_in_seconds"] == 120
    assert admin("POST", ttl, -5).status == 412
    assert admin("DELETE", ttl).status == 204
    assert admin("GET", ttl).status == 204


def test_retention_get_set_remove(admin: Callable[..., Answer]) -> None:
    retention = f"{NAMESPACE_PATH}/retention"
    assert admin("GET", retention).status == 204
    value = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}
    assert admin("POST", retention, value).status == 204
    assert admin("GET", retention).json() == value
    assert admin("POST", retention, {"retentionTimeInMinutes": -2}).status == 400
    assert admin("DELETE", retention).status == 204
    assert admin("GET", retention).status == 204


def test_backlog_quota_set_read_remove_and_kept_below_retention(
        admin: Callable[..., Answer]) -> None:
    quota = f"{NAMESPACE_PATH}/backlogQuota"
    quotas = f"{NAMESPACE_PATH}/backlogQuotaMap"
    assert admin("GET", quotas).json() == {}
    body = {"limitSize": 1024, "limitTime": -1, "policy": "producer_exception"}
    assert admin("POST", quota, body).status == 204
    assert admin("POST", f"{quota}?backlogQuotaType=message_age",
                 {"limitTime": 30, "policy": "consumer_backlog_eviction"}).status == 204
    assert admin("GET", quotas).json() == {
        "destination_storage": body,
        "message_age": {"limitSize": -1, "limitTime": 30, "policy": "consumer_backlog_eviction"}}
    assert admin("GET", quota).status == 405  # Pulsar reads quotas only as the map
    # A quota at or above the retention it lives in is refused, as Pulsar refuses it.
    assert admin("POST", f"{NAMESPACE_PATH}/retention",
                 {"retentionTimeInMinutes": 1, "retentionSizeInMB": -1}).status == 204
    assert admin("POST", f"{quota}?backlogQuotaType=message_age", {"limitTime": 60}).status == 412
    assert admin("DELETE", f"{NAMESPACE_PATH}/retention").status == 204
    assert admin("POST", f"{quota}?backlogQuotaType=nonsense", body).status == 400
    for kind in ("destination_storage", "message_age"):
        assert admin("DELETE", f"{quota}?backlogQuotaType={kind}").status == 204
    assert admin("GET", quotas).json() == {}


# --- metrics ------------------------------------------------------------------------------


def test_metrics_report_per_topic_counters_and_backlog(
        client: pulsar.Client, admin: Callable[..., Answer]) -> None:
    topic, path = names("measured")
    assert admin("PUT", f"{path}/subscription/sub").status == 204
    produce(client, topic, 3)
    answer = admin("GET", "/metrics")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = answer.body.decode()
    labels = f'cluster="standalone",namespace="public/default",topic="{topic}"'
    assert f"pulsar_msg_backlog{{{labels}}} 3.0" in text
    assert f"pulsar_in_messages_total{{{labels}}} 3.0" in text
    assert f'pulsar_subscription_back_log{{{labels},subscription="sub"}} 3.0' in text
    assert "# TYPE pulsar_rate_in gauge" in text


# --- ownership ----------------------------------------------------------------------------


def test_subscription_operations_on_another_broker_are_redirected_to_the_owner(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    two = make_cluster(brokers=2)
    topic, path = names("redirected")
    owner = owner_of(two, topic)
    other = next(b for b in two.brokers if b is not owner)
    produce(pulsar_client(owner.service_url), topic, 2)
    answer = call(other.admin_url, "POST", f"{path}/subscription/sub/skip_all")
    assert answer.status == 307
    assert answer.headers["Location"].startswith(owner.admin_url)
    assert "authoritative=true" in answer.headers["Location"]


# --- deduplication ------------------------------------------------------------------------

DEDUP_NAMESPACE = "/admin/v2/namespaces/public/dedup"


@pytest.fixture(scope="module")
def deduplicating_namespace(cluster: LocalCluster) -> str:
    """A namespace of its own with deduplication on (public/default's other tests keep
    theirs off)."""
    assert call(cluster.brokers[0].admin_url, "PUT", DEDUP_NAMESPACE, {}).status == 204
    assert call(cluster.brokers[0].admin_url, "POST", f"{DEDUP_NAMESPACE}/deduplication",
                True).status == 204
    return "persistent://public/dedup"


def repeat_is_deduplicated(client: pulsar.Client, topic: str) -> bool:
    """Send sequence id 1 twice under one producer name: whether the second was answered
    as a duplicate (message id -1:-1, nothing stored)."""
    producer = client.create_producer(topic, producer_name="fixed", batching_enabled=False)
    producer.send(b"once", sequence_id=1)
    repeat = producer.send(b"twice", sequence_id=1)
    producer.close()
    return (repeat.ledger_id(), repeat.entry_id()) == (-1, -1)


def test_namespace_deduplication_get_set_remove(admin: Callable[..., Answer]) -> None:
    dedup = f"{NAMESPACE_PATH}/deduplication"
    assert admin("GET", dedup).status == 204  # not set: the broker's default applies
    assert admin("POST", dedup, False).status == 204
    assert admin("GET", dedup).json() is False
    assert admin("GET", NAMESPACE_PATH).json()["deduplicationEnabled"] is False
    assert admin("POST", dedup, "yes").status == 400
    assert admin("DELETE", dedup).status == 204
    assert admin("GET", dedup).status == 204


def test_topic_deduplication_overrides_the_namespace(
        client: pulsar.Client, admin: Callable[..., Answer], deduplicating_namespace: str) -> None:
    inherits, overrides = (f"{deduplicating_namespace}/{name}" for name in ("inherits", "own"))
    own_path = "/admin/v2/persistent/public/dedup/own/deduplicationEnabled"
    assert admin("POST", own_path, False).status == 404  # no such topic yet
    assert admin("PUT", "/admin/v2/persistent/public/dedup/own").status == 204
    assert admin("GET", own_path).status == 204
    assert admin("GET", f"{own_path}?applied=true").json() is True  # the namespace's
    assert admin("POST", own_path, False).status == 204
    assert (admin("GET", own_path).json(), admin("GET", f"{own_path}?applied=true").json()) \
        == (False, False)
    assert repeat_is_deduplicated(client, inherits)
    assert not repeat_is_deduplicated(client, overrides)
    assert admin("DELETE", own_path).status == 204
    assert admin("GET", own_path).status == 204


def test_a_deleted_topic_leaves_no_policy_behind(admin: Callable[..., Answer],
                                                 deduplicating_namespace: str) -> None:
    path = "/admin/v2/persistent/public/dedup/recreated"
    assert admin("PUT", path).status == 204
    assert admin("POST", f"{path}/deduplicationEnabled", False).status == 204
    assert admin("DELETE", path).status == 204
    assert admin("PUT", path).status == 204
    assert admin("GET", f"{path}/deduplicationEnabled").status == 204


def test_deduplication_survives_an_unload_on_real_storage(
        client: pulsar.Client, admin: Callable[..., Answer], deduplicating_namespace: str) -> None:
    topic = f"{deduplicating_namespace}/reloaded"
    producer = client.create_producer(topic, producer_name="fixed", batching_enabled=False)
    for n in range(1, 4):
        producer.send(f"m{n}".encode(), sequence_id=n)
    producer.close()
    assert admin("PUT", "/admin/v2/persistent/public/dedup/reloaded/unload").status == 204
    again = client.create_producer(topic, producer_name="fixed", batching_enabled=False)
    assert again.last_sequence_id() == 3  # rebuilt by replaying the ledger
    resent = again.send(b"m3", sequence_id=3)
    assert (resent.ledger_id(), resent.entry_id()) == (-1, -1)
    cursors = admin("GET", "/admin/v2/persistent/public/dedup/reloaded/internalStats").json()
    assert "pulsar.dedup" in cursors["cursors"]
    stats = admin("GET", "/admin/v2/persistent/public/dedup/reloaded/stats").json()
    assert "pulsar.dedup" not in stats["subscriptions"]


def test_a_policy_change_reaches_a_loaded_topic(
        client: pulsar.Client, admin: Callable[..., Answer], deduplicating_namespace: str) -> None:
    topic = f"{deduplicating_namespace}/switched"
    path = "/admin/v2/persistent/public/dedup/switched"
    assert repeat_is_deduplicated(client, topic)
    assert admin("POST", f"{path}/deduplicationEnabled", False).status == 204
    deadline = time.monotonic() + 10
    while "pulsar.dedup" in admin("GET", f"{path}/internalStats").json()["cursors"]:
        assert time.monotonic() < deadline, "deduplication still on 10 s after the change"
        time.sleep(0.1)
    assert not repeat_is_deduplicated(client, topic)
