"""The knobs more than one workload reads, each declared once: a workload's `Knobs` takes
them by deriving from these classes (harness/workloads/knobs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from harness.workloads.knobs import Knobs, knob
from harness.workloads.settings import SUBSCRIPTION_MODES


@dataclass(frozen=True)
class SendKnobs(Knobs):
    """What every workload that sends under faults reads (scalable, topic, geo, migration)."""

    send_timeout_s: float = knob(10.0, "How long a send may wait before it is given up as "
                                       "`info`; the process goes on under a fresh id.",
                                 least=0.1)
    """Below a fault's length, sends are still invoked while the fault lasts. A shorter
    timeout than the least would time out sends on loopback: the official client's zero
    turns it off."""


@dataclass(frozen=True)
class OfficialClientKnobs(SendKnobs):
    """What the workloads on the official `pulsar-client` read (topic, geo, migration)."""

    subscription_mode: str = knob("failover", "How the consumers share their one "
                                              "subscription.", choices=SUBSCRIPTION_MODES)
    processes: int = knob(1, "Logical processes per producer, each with one send in flight.",
                          least=1)
    """A producer has this many sends outstanding at once."""

    def problem(self, common: Mapping[str, Any]) -> tuple[str, str] | None:
        consumers = common["consumers"]
        if self.subscription_mode == "exclusive" and consumers > 1:
            return "subscription_mode", (
                f"exclusive attaches one consumer and refuses the others (ConsumerBusy), and "
                f"consumers is {consumers}; failover keeps the others as standbys")
        return super().problem(common)


@dataclass(frozen=True)
class ConsumerWorkKnobs(Knobs):
    """How long consumers work on a message (scalable, topic)."""

    process_ms: float = knob(0.0, "How long a consumer works on each message before it "
                                  "acknowledges it.", least=0)
    """Above the time between messages, the consumers fall behind; a scalable topic's splits
    and merges then find a backlog on their parents, where ordering bugs live, and a topic's
    backlog outgrows what the consumers' receiver queues hold."""


@dataclass(frozen=True)
class ReplicatedSubscriptionKnobs(Knobs):
    """How far the replicated subscription's consumers trail (geo, migration)."""

    consumer_lag_s: float = knob(1.5, "How long after its publication the replicated "
                                      "subscription's consumers handle a message.", least=0)
    """At a failover or a migration's switch the messages of the last this-many seconds were
    delivered but not acknowledged, and the cluster taken over must deliver them again; the
    longer it is, the further a cluster's copy of the subscription trails the newest
    messages."""


@dataclass(frozen=True)
class DeduplicationKnobs(Knobs):
    """Whether the broker deduplicates the workload's sends (topic)."""

    deduplication: bool = knob(False, "Switch the broker's deduplication on for the "
                                      "topic, so a resent message is stored once.")
    """Recorded in the run's `meta`, which makes a value at two positions an anomaly
    (`multi-position`)."""


def deduplicates(knobs: Knobs) -> TypeGuard[DeduplicationKnobs]:
    """Whether a workload with `knobs` switches the broker's deduplication on."""
    return isinstance(knobs, DeduplicationKnobs) and knobs.deduplication
