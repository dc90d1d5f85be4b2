"""The topics served here as Prometheus text (exposition format 0.0.4), under the names
Pulsar's `/metrics` uses for topic-level metrics, labelled `cluster`, `namespace`, `topic`
(and `subscription` for a subscription's).

Pulsar computes its rates over a stats interval; we have no such timer, so a rate here is
the change of its counter since the previous scrape of this broker, divided by the time
between the two (0 on the first scrape, and after a topic is loaded afresh).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from impl.broker.topic import Topic
from impl.system_cursors import is_system_cursor

Labels = tuple[tuple[str, str], ...]

# (name, type, help); the order in which they are written.
METRICS = [
    ("pulsar_subscriptions_count", "gauge", "Subscriptions of the topic"),
    ("pulsar_producers_count", "gauge", "Producers connected to the topic"),
    ("pulsar_consumers_count", "gauge", "Consumers connected to the topic"),
    ("pulsar_rate_in", "gauge", "Messages published per second"),
    ("pulsar_rate_out", "gauge", "Messages dispatched per second"),
    ("pulsar_throughput_in", "gauge", "Bytes published per second"),
    ("pulsar_msg_backlog", "gauge", "Entries not yet acknowledged, over all subscriptions"),
    ("pulsar_in_messages_total", "counter", "Messages published since the topic loaded"),
    ("pulsar_in_bytes_total", "counter", "Bytes published since the topic loaded"),
    ("pulsar_out_messages_total", "counter", "Messages dispatched since the topic loaded"),
    ("pulsar_subscription_back_log", "gauge", "Entries the subscription has not acknowledged"),
    ("pulsar_subscription_msg_rate_out", "gauge", "Messages dispatched per second"),
    ("pulsar_subscription_consumers_count", "gauge", "Consumers of the subscription"),
]


@dataclass
class RateSampler:
    """Counter values at the previous scrape, to turn counters into rates."""

    _previous: dict[tuple[str, Labels], tuple[float, float]] = field(default_factory=dict)

    def rate(self, counter: str, labels: Labels, value: float, now: float) -> float:
        before = self._previous.get((counter, labels))
        self._previous[(counter, labels)] = (now, value)
        if before is None or value < before[1] or now <= before[0]:
            return 0.0
        return (value - before[1]) / (now - before[0])

    def forget_all_but(self, seen: set[tuple[str, Labels]]) -> None:
        """Drop counters of topics and subscriptions no longer served here."""
        for key in set(self._previous) - seen:
            del self._previous[key]


def _samples(cluster: str, topic: Topic, rates: RateSampler,
             now: float) -> Iterator[tuple[str, Labels, float]]:
    labels: Labels = (("cluster", cluster), ("namespace", str(topic.name.namespace_name)),
                      ("topic", str(topic.name)))
    cursors = {name: c for name, c in topic.ledger.cursors().items()
               if not is_system_cursor(name)}
    subscriptions = topic.subscriptions
    out_total = sum(s.messages_out for s in subscriptions.values())
    yield "pulsar_subscriptions_count", labels, len(set(cursors) | set(subscriptions))
    yield "pulsar_producers_count", labels, len(topic.producers)
    yield "pulsar_consumers_count", labels, sum(len(s.consumers) for s in subscriptions.values())
    yield "pulsar_rate_in", labels, rates.rate("in", labels, topic.messages_in, now)
    yield "pulsar_rate_out", labels, rates.rate("out", labels, out_total, now)
    yield "pulsar_throughput_in", labels, rates.rate("in_bytes", labels, topic.bytes_in, now)
    yield "pulsar_msg_backlog", labels, sum(c.backlog() for c in cursors.values())
    yield "pulsar_in_messages_total", labels, topic.messages_in
    yield "pulsar_in_bytes_total", labels, topic.bytes_in
    yield "pulsar_out_messages_total", labels, out_total
    for name in sorted(set(cursors) | set(subscriptions)):
        sub_labels = (*labels, ("subscription", name))
        subscription = subscriptions.get(name)
        cursor = cursors.get(name) or (subscription.cursor if subscription else None)
        yield "pulsar_subscription_back_log", sub_labels, cursor.backlog() if cursor else 0
        yield "pulsar_subscription_msg_rate_out", sub_labels, rates.rate(
            "out", sub_labels, subscription.messages_out if subscription else 0, now)
        yield ("pulsar_subscription_consumers_count", sub_labels,
               len(subscription.consumers) if subscription else 0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _line(name: str, labels: Labels, value: float) -> str:
    text = ",".join(f'{key}="{_escape(v)}"' for key, v in labels)
    return f"{name}{{{text}}} {float(value)!r}"


def render(cluster: str, topics: Iterable[Topic], rates: RateSampler) -> str:
    now = time.monotonic()
    samples = [s for topic in topics for s in _samples(cluster, topic, rates, now)]
    rates.forget_all_but({(counter, labels) for _, labels, _ in samples
                          for counter in ("in", "out", "in_bytes")})
    lines = []
    for name, kind, text in METRICS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        lines += [_line(name, labels, value) for metric, labels, value in samples
                  if metric == name]
    return "\n".join(lines) + "\n"
