"""Schemas on a real broker, kept in ZooKeeper: what the official client registers is what
the admin API reads back (from its znode at /schemas/tenant/ns/topic), uploads and
compatibility tests follow the namespace's strategy, and a deleted schema is gone."""

from __future__ import annotations

from collections.abc import Callable

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String

from harness.targets.local.cluster import LocalCluster
from impl.metadata import paths
from impl.metadata.store import MetadataStore
from tests.cluster.helpers import Answer, call, module_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]

TOPIC = "schemas"
SCHEMA_PATH = f"/admin/v2/schemas/public/default/{TOPIC}"
STRATEGY_PATH = "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy"


class User(Record):
    name = String()
    age = Integer(required=True)


def definition(*fields: dict[str, object]) -> str:
    return AvroSchema(None, {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": ["null", "string"]}, {"name": "age", "type": "int"},
        *fields]}).schema_info().schema()


cluster = module_cluster("schemas", brokers=1)


def test_schemas_live_in_zookeeper_and_the_admin_api_serves_them(
        cluster: LocalCluster, pulsar_client: Callable[..., pulsar.Client]) -> None:
    def admin(method: str, path: str, body: object = None) -> Answer:
        return call(cluster.brokers[0].admin_url, method, path, body)

    client = pulsar_client(cluster.service_urls[0])
    client.create_producer(f"persistent://public/default/{TOPIC}",
                           schema=AvroSchema(User)).send(User(name="ada", age=36))

    latest = admin("GET", SCHEMA_PATH + "/schema")
    assert latest.status == 200
    assert (latest.json()["version"], latest.json()["type"]) == (0, "AVRO")
    assert '"age"' in latest.json()["data"]
    store = MetadataStore.connect(cluster.zk_connect_string)
    try:
        assert store.exists(paths.topic_schemas("public", "default", TOPIC))
    finally:
        store.close()

    with_default = {"type": "AVRO", "schema": definition(
        {"name": "email", "type": ["null", "string"], "default": None})}
    text_age = {"type": "AVRO", "schema": definition()
                .replace('"type": "int"', '"type": "string"')}
    assert admin("POST", SCHEMA_PATH + "/compatibility", text_age).json()[
        "isCompatibility"] is False
    assert admin("POST", SCHEMA_PATH + "/schema", text_age).status == 409
    assert admin("POST", SCHEMA_PATH + "/schema", {"type": "AVRO", "schema": "{"}).status == 422
    posted = admin("POST", SCHEMA_PATH + "/schema", with_default)
    assert (posted.status, posted.json()) == (200, {"version": {"version": 1}})
    assert [s["version"] for s in admin("GET", SCHEMA_PATH + "/schemas").json()[
        "getSchemaResponses"]] == [0, 1]
    assert admin("GET", SCHEMA_PATH + "/schema/0").json()["version"] == 0

    assert admin("GET", STRATEGY_PATH).json() == "FULL"
    assert admin("PUT", STRATEGY_PATH, "ALWAYS_COMPATIBLE").status == 204
    assert admin("GET", STRATEGY_PATH).json() == "ALWAYS_COMPATIBLE"
    try:
        assert admin("POST", SCHEMA_PATH + "/schema", text_age).json() == {
            "version": {"version": 2}}
    finally:
        admin("PUT", STRATEGY_PATH, "FULL")

    assert admin("DELETE", SCHEMA_PATH + "/schema").json() == {"version": 3}
    assert admin("GET", SCHEMA_PATH + "/schema").status == 404
    with pytest.raises(pulsar.IncompatibleSchema):  # data, but no schema to check against
        client.subscribe(f"persistent://public/default/{TOPIC}", "typed",
                         schema=AvroSchema(User))
