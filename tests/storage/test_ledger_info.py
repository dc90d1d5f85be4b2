"""Managed ledger names and metadata, without ZooKeeper: a topic's managed ledger sits
where the admin API looks for the topic, and the JSON round-trips."""

from __future__ import annotations

from impl.metadata import paths
from impl.naming.topic_name import TopicName
from impl.storage.api import Position
from impl.storage.factory import managed_ledger_name
from impl.storage.ledger_info import (
    CursorInfo,
    LedgerInfo,
    ManagedLedgerInfo,
    cursor_path,
    managed_ledger_path,
)


def test_a_topics_ledger_is_where_the_topic_is_looked_up() -> None:
    topic = TopicName.parse("persistent://acme/prod/orders/eu")
    name = managed_ledger_name(topic)
    assert name == "acme/prod/persistent/orders/eu"
    assert managed_ledger_path(name) == paths.managed_ledger("acme", "prod", "orders/eu")
    assert cursor_path(name, "sub/1") == paths.managed_cursor("acme", "prod", "orders/eu",
                                                              "sub/1")


def test_metadata_json_round_trips() -> None:
    info = ManagedLedgerInfo((LedgerInfo(3, ("127.0.0.1:1",), 4),
                              LedgerInfo(9, ("127.0.0.1:2",))), True, Position(3, 4))
    assert ManagedLedgerInfo.from_json(info.to_json()) == info
    assert ManagedLedgerInfo.from_json(b"") == ManagedLedgerInfo()
    cursor = CursorInfo(Position(3, -1), ((Position(3, 0), Position(3, 2)),))
    assert CursorInfo.from_json(cursor.to_json()) == cursor
