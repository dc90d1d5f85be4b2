"""The probes of a topic's end: the last message id, and termination through the admin
API, after which the topic refuses sends and producers while its subscription still gets
every message."""

from __future__ import annotations

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.receiving import acknowledged, receive
from harness.workloads.contract.recording import Group, observed
from harness.workloads.official_client import position_of


def terminate(clients: Clients, group: Group) -> None:
    """The last message id before termination; termination's answer; after it, sends
    and new producers refused, while the subscription still gets every message."""
    member = clients.subscribe(group, "c0", "terminated", "exclusive")
    values = group.values(5)
    ids = clients.send(group, values)
    last = position_of(ids[-1])
    consumer = member.consumer
    assert consumer is not None
    group.expect("last-message-id", last,
                 observed(lambda: position_of(consumer.get_last_message_id())))
    group.expect("terminate-last-position", last, clients.terminate_topic(group.topic))
    refused = clients.send_once(group, group.values(1, first=len(values))[0])
    group.expect("terminated-refuses-send", {"error": "TopicTerminated"},
                 {"error": refused.error} if refused.error else
                 {"accepted": position_of(refused.message_id)})
    group.expect("terminated-refuses-producer", {"error": "TopicTerminated"},
                 observed(lambda: clients.accepted_producer(group)))
    receive([member], acknowledged, lambda: values[-1] in member.got)


GROUPS = (GroupSpec("terminate", ("last-message-id", "terminate-last-position",
                                  "terminated-refuses-send", "terminated-refuses-producer"),
                    terminate),)
