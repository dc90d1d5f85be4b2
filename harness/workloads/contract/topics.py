"""The probes of topics that are more than one topic: a partitioned topic (its count in
the metadata, one topic per partition, the client's producer spreading keys over them
and one subscription reading all of them), and a pattern consumer, which reads every
topic of the namespace whose name its regular expression matches, and no other."""

from __future__ import annotations

import re

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import MESSAGES
from harness.workloads.contract.receiving import acknowledged, receive
from harness.workloads.contract.recording import Group, Member
from harness.workloads.stats import topic_path

PARTITIONS = 3


def partitioned(clients: Clients, group: Group) -> None:
    """A topic made with PARTITIONS partitions through the admin API: it reports that
    count, keyed sends land on more than one partition, and one Shared subscription of
    the topic gets every message once."""
    path = topic_path(group.topic) + "/partitions"
    clients.set_up("PUT", path, PARTITIONS)
    answer = clients.set_up("GET", path)
    group.expect("partitioned-count", {"partitions": PARTITIONS},
                 {"partitions": answer.get("partitions") if isinstance(answer, dict) else answer})
    member = clients.subscribe(group, "c0", "all-partitions", "shared")
    values = group.values(MESSAGES)
    ids = clients.send(group, values)
    receive([member], acknowledged, lambda: len(member.got) >= len(values))
    group.expect("partitioned-all-delivered", sorted(values), sorted(member.got))
    used = {message_id.partition() for message_id in ids}
    group.expect("partitioned-keys-spread", {"several-partitions": True},
                 {"several-partitions": len(used) > 1}, partitions_used=sorted(used))


def pattern(clients: Clients, group: Group) -> None:
    """Two topics whose names the pattern matches and one it does not, each with
    messages: a pattern consumer subscribed from the earliest gets the two topics'
    messages and none of the third's. A target that refuses the pattern subscription
    fails the probe with its refusal."""
    matching = [f"{group.topic}-match-{n}" for n in range(2)]
    other = f"{group.topic}-other"
    values = {topic: [f"{group.label}-{n}-{m}" for m in range(MESSAGES // 4)]
              for n, topic in enumerate((*matching, other))}
    expected = sorted(value for topic in matching for value in values[topic])
    for topic in values:  # they exist before the consumer lists them
        clients.set_up("PUT", topic_path(topic))
    try:
        consumer = clients.pattern_consumer(
            group, re.compile(re.escape(group.topic) + "-match-.*"),
            initial_position=pulsar.InitialPosition.Earliest)
    except pulsar.PulsarException as exc:
        group.expect("pattern-matching-topics-only", expected, {"error": type(exc).__name__})
        return
    member = Member(clients.process(), {"subscription": group.name, "consumer": "c0",
                                        "cluster": clients.context.cluster},
                    consumer.receive, consumer)
    for topic, sent in values.items():
        clients.send(group, sent, topic)

    def handle(member: Member, message: pulsar.Message) -> None:
        member.fields["topic"] = message.topic_name()  # one consumer, several topics
        acknowledged(member, message)

    receive([member], handle, lambda: len(member.got) >= len(expected))
    group.expect("pattern-matching-topics-only", expected, sorted(member.got))


GROUPS = (
    GroupSpec("partitioned", ("partitioned-count", "partitioned-all-delivered",
                              "partitioned-keys-spread"), partitioned),
    GroupSpec("pattern", ("pattern-matching-topics-only",), pattern),
)
