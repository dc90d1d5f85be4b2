"""Topic names and namespace bundles: pure functions, Pulsar's spellings."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.naming.bundles import (
    FULL_UPPER_BOUND,
    BundleRange,
    NamespaceBundle,
    NamespaceBundles,
    topic_hash,
)
from impl.naming.topic_name import NamespaceName, TopicName
from wire.topic_names import InvalidTopicName

NS = NamespaceName("public", "default")


@pytest.mark.parametrize(
    ("given_name", "full"),
    [
        ("my-topic", "persistent://public/default/my-topic"),
        ("t/ns/my-topic", "persistent://t/ns/my-topic"),
        ("persistent://t/ns/a/b", "persistent://t/ns/a/b"),
        ("non-persistent://t/ns/x", "non-persistent://t/ns/x"),
    ],
)
def test_every_client_spelling_gives_the_full_name(given_name: str, full: str) -> None:
    assert str(TopicName.parse(given_name)) == full


@pytest.mark.parametrize("bad", ["persistent://t/ns", "kafka://t/ns/x", "t/ns/", "persistent://t//x"])
def test_names_without_a_namespace_are_refused(bad: str) -> None:
    with pytest.raises(InvalidTopicName, match="invalid topic name"):
        TopicName.parse(bad)


def test_four_even_bundles_print_as_pulsar_prints_them() -> None:
    ranges = [str(b.range) for b in NamespaceBundles.even(NS, 4).bundles]
    assert ranges == ["0x00000000_0x40000000", "0x40000000_0x80000000",
                      "0x80000000_0xc0000000", "0xc0000000_0xffffffff"]


def test_the_hash_is_crc32_of_the_full_name() -> None:
    topic = TopicName.parse("persistent://public/default/orders")
    assert topic_hash(topic) == zlib.crc32(b"persistent://public/default/orders")
    # A short spelling lands in the same bundle as the full one.
    bundles = NamespaceBundles.even(NS, 16)
    assert bundles.find(TopicName.parse("orders")) == bundles.find(topic)


@given(st.text(min_size=1, max_size=40).filter(lambda s: "/" not in s and s.isprintable()),
       st.integers(min_value=1, max_value=64))
def test_every_topic_falls_in_exactly_one_bundle_that_contains_its_hash(
        local: str, count: int) -> None:
    topic = TopicName("persistent", "public", "default", local)
    bundles = NamespaceBundles.even(NS, count)
    found = bundles.find(topic)
    assert found.range.contains(topic_hash(topic))
    assert sum(b.range.contains(topic_hash(topic)) for b in bundles.bundles) == 1


def test_the_last_range_holds_the_top_of_the_space() -> None:
    last = NamespaceBundles.even(NS, 4).bundles[-1].range
    assert last.contains(FULL_UPPER_BOUND)
    assert not NamespaceBundles.even(NS, 4).bundles[0].range.contains(0x40000000)


def test_bundle_names_round_trip_and_bad_ranges_are_named() -> None:
    bundle = NamespaceBundles.even(NS, 2).bundles[1]
    assert NamespaceBundle.parse(str(bundle)) == bundle
    with pytest.raises(ValueError, match="0x40000000_0x10"):
        BundleRange.parse("0x40000000_0x10")
    with pytest.raises(ValueError, match="boundaries"):
        NamespaceBundles.from_boundaries(NS, [0, 5, 3, FULL_UPPER_BOUND])
