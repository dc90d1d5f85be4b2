"""Names as Pulsar checks them: a cluster, tenant or namespace name holds letters, digits
and `_-=:.` only; a topic's own name anything printable; a topic's domain is one of ours.
Once, a tenant named `a/b` (sent URL-encoded) was filed as namespace `b` of tenant `a`."""

from __future__ import annotations

import re

import pytest

from impl.naming.entity_names import InvalidName, check_name
from impl.naming.topic_name import NamespaceName, TopicName
from wire.topic_names import InvalidTopicName


@pytest.mark.parametrize("name", ["public", "my-tenant_2", "a=b:c.d", "A9"])
def test_names_pulsar_accepts_pass(name: str) -> None:
    assert check_name("tenant", name) == name


@pytest.mark.parametrize("name", ["", "a/b", "nul\x00", "sp ace", "percent%2F", "ü"])
def test_names_pulsar_refuses_are_refused(name: str) -> None:
    with pytest.raises(InvalidName, match=re.escape("letters, digits and _-=:. only")):
        check_name("tenant", name)
    with pytest.raises(InvalidName):
        NamespaceName("public", name)


@pytest.mark.parametrize("name", ["persistent://a/b/c\x00", "persistent://a b/ns/t",
                                  "unknown://public/default/t", "persistent://t/n%2F/x"])
def test_a_topic_name_with_a_bad_part_is_an_invalid_topic_name(name: str) -> None:
    with pytest.raises(InvalidTopicName):
        TopicName.parse(name)


def test_a_topics_own_name_may_hold_slashes_and_any_printable_text() -> None:
    assert TopicName.parse("persistent://t/ns/a/b ü").local_name == "a/b ü"
