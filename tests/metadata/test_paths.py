"""Znode paths: PIP-468's layout, and user names that can never break out of their level."""

from __future__ import annotations

import pytest

from impl.metadata import paths
from impl.metadata.errors import InvalidName


def test_scalable_topic_paths_follow_pip_468() -> None:
    assert paths.scalable_topic("acme", "orders", "payments") == "/topics/acme/orders/payments"
    assert (
        paths.scalable_topic_controller("acme", "orders", "payments")
        == "/topics/acme/orders/payments/controller"
    )
    assert (
        paths.consumer_registration("acme", "orders", "payments", "billing", "c-1")
        == "/topics/acme/orders/payments/subscriptions/billing/consumers/c-1"
    )


@pytest.mark.parametrize("name", ["a/b", "../x", "100%", "spaces and\ttabs", "ünïcode", "."])
def test_any_topic_name_is_one_znode_level_and_decodes_back(name: str) -> None:
    path = paths.managed_ledger("acme", "orders", name)
    parent, _, last = path.rpartition("/")
    assert parent == "/managed-ledgers/acme/orders/persistent"
    assert last not in (".", "..")
    assert paths.decode(last) == name


def test_broker_urls_and_bookie_addresses_stay_readable() -> None:
    assert paths.live_broker("pulsar://10.0.0.7:6650") == \
        "/loadbalance/brokers/pulsar:%2F%2F10.0.0.7:6650"
    assert paths.bookie_registration("127.0.0.1:3181") == "/ledgers/available/127.0.0.1:3181"


def test_empty_names_are_rejected_with_what_they_name() -> None:
    with pytest.raises(InvalidName, match="invalid subscription name ''"):
        paths.scalable_subscription("acme", "orders", "payments", "")


def test_ledger_paths_sort_by_id() -> None:
    ids = [7, 100, 12, 0]
    assert sorted(paths.ledger(i) for i in ids) == [paths.ledger(i) for i in sorted(ids)]
