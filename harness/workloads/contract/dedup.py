"""The probes of broker-side deduplication, switched on for one topic through its policy
(`deduplicationEnabled`): a message sent again under its producer name and sequence id is
stored once, also when the resend comes after the topic was unloaded (its new owner must
rebuild what it knows of each producer before taking one); and a new producer of that
name learns the last sequence id, so it numbers on from there.

A target must allow topic policies (Pulsar's `topicLevelPoliciesEnabled`, on by default
since 3.0); one that refuses the policy leaves these probes undecided."""

from __future__ import annotations

import time

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import RECEIVE_BOUND_S, SETUP_S
from harness.workloads.contract.receiving import value_of
from harness.workloads.contract.recording import CouldNotRun, Group
from harness.workloads.stats import deduplicate, topic_path

NAME = "contract-deduplicated"
SENDS = ((1, "first"), (2, "second"), (2, "second"), (3, "third"))
"""(sequence id, text): the third is the second again. The official Python client drops a
sequence id of 0, so they start at 1."""


def deduplicated(clients: Clients, group: Group) -> None:
    """SENDS by one producer; the topic unloaded; a new producer of the name, which must
    learn sequence id 3, sends the last message again: what the topic stores, read back
    from the earliest, holds each text once (a reader, not a consumer: a consumer may be
    handed a message again after the unload, which is not a second copy)."""
    path = topic_path(group.topic)
    clients.set_up("PUT", path)  # a policy needs its topic
    refused = deduplicate(clients.context.admin_urls, group.topic, SETUP_S)
    if refused is not None:
        raise CouldNotRun(refused)
    first = clients.producer(group, producer_name=NAME, batching_enabled=False)
    for sequence_id, text in SENDS:
        first.send(f"{group.label}-{text}".encode(), sequence_id=sequence_id)
    group.close_one(first)
    clients.set_up("PUT", path + "/unload")  # its next owner starts from what is stored
    again = clients.producer(group, producer_name=NAME, batching_enabled=False)
    group.expect("dedup-last-sequence-id", {"last_sequence_id": SENDS[-1][0]},
                 {"last_sequence_id": again.last_sequence_id()})
    last_id, last_text = SENDS[-1]
    again.send(f"{group.label}-{last_text}".encode(), sequence_id=last_id)
    reader = clients.raw_reader(group, pulsar.MessageId.earliest)
    stored = []
    deadline = time.monotonic() + RECEIVE_BOUND_S
    while time.monotonic() < deadline and reader.has_message_available():
        stored.append(value_of(reader.read_next(int(RECEIVE_BOUND_S * 1000))))
    group.expect("dedup-repeat-stored-once",
                 [f"{group.label}-{text}" for text in ("first", "second", "third")], stored)


GROUPS = (GroupSpec("dedup", ("dedup-repeat-stored-once", "dedup-last-sequence-id"),
                    deduplicated),)
