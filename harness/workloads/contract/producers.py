"""The probes of who may write (PIP-68 access modes, unique producer names): a topic with
an Exclusive producer refuses a second Exclusive one and a Shared one; a producer name is
held by one producer of a topic at a time. Each refusal must be the client's exception,
at once: the one call a probe tests is observed whatever it does."""

from __future__ import annotations

from typing import Any

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.recording import Group, observed

REFUSED = {"refused": True}
EXCLUSIVE_REFUSALS = ("ProducerFenced", "ProducerBusy")
"""What a second Exclusive producer may be told: Pulsar says ProducerFenced (an exclusive
producer holds the topic); ProducerBusy says the same in other words."""
NAME = "contract-named"


def exclusive(clients: Clients, group: Group) -> None:
    """With an Exclusive producer on the topic, a second Exclusive producer is refused
    (either refusal), and a Shared one is refused with ProducerBusy."""
    clients.producer(group, access_mode=pulsar.ProducerAccessMode.Exclusive)
    second = _producer(clients, group, access_mode=pulsar.ProducerAccessMode.Exclusive)
    group.expect("producer-exclusive-refuses-exclusive", REFUSED,
                 REFUSED if second.get("error") in EXCLUSIVE_REFUSALS else second,
                 answer=second)
    group.expect("producer-exclusive-refuses-shared", {"error": "ProducerBusy"},
                 _producer(clients, group))


def unique_name(clients: Clients, group: Group) -> None:
    """A second producer under a name a producer of the topic holds is refused with
    ProducerBusy."""
    clients.producer(group, producer_name=NAME)
    group.expect("producer-name-unique", {"error": "ProducerBusy"},
                 _producer(clients, group, producer_name=NAME))


def _producer(clients: Clients, group: Group, **options: Any) -> Any:
    return observed(lambda: clients.accepted_producer(group, **options))


GROUPS = (
    GroupSpec("producer-exclusive", ("producer-exclusive-refuses-exclusive",
                                     "producer-exclusive-refuses-shared"), exclusive),
    GroupSpec("producer-name", ("producer-name-unique",), unique_name),
)
