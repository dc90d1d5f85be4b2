"""Named, switchable bugs ("mutants") of the reference implementation.

Each mutant is a classic mistake one of the source documents warns about. All are off by
default; a scenario or a test switches one on to prove that a checker (or a test) notices
the harm it does. The catalogue lives here so that a typo in a scenario is an error, not a
silently correct run; the code a mutant breaks asks `mutants.on(NAME)` where it breaks.
docs/mutants.md is the reader's version of this table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    component: str
    violates: str
    """The document and section whose warning the mutant ignores."""
    harm: str
    """What a checker or test should observe when it is on."""


CATALOGUE: dict[str, Mutant] = {m.name: m for m in (
    # --- broker core -------------------------------------------------------------------
    Mutant("no-fencing", "managed ledger",
           "PIP-57 (001) and the ownership model: a new owner must fence the previous "
           "owner's ledger before writing",
           "a paused old owner acknowledges writes after the takeover: forked positions"),
    Mutant("reown-without-owner-check", "ownership",
           "PIP-57 (001): check that the ephemeral owner is the current session, else wait "
           "for the znode's deletion",
           "two brokers serve one bundle after a session expiry"),
    Mutant("reconnect-retried-forever", "ownership",
           "PIP-57 (001), zookeeperSessionExpiredPolicy=reconnect: if a new session cannot "
           "be started, retry a configured number of times and then shut the broker down",
           "a broker cut from ZooKeeper stays up for as long as the cut lasts, owning "
           "nothing: a client that reaches it gets errors (no lookup, no topic load) "
           "instead of finding it gone and going to a broker that can serve it"),
    Mutant("ack-before-durable", "bookie",
           "ledger store contract: an entry id is returned only once the entry is fsynced",
           "acknowledged messages lost when a bookie is killed"),
    Mutant("cursor-write-throttled-unflushed", "managed cursor",
           "Pulsar's ManagedCursorImpl and BrokerService: a mark-delete held back by the "
           "rate limit (managedLedgerDefaultMarkDeleteRateLimit) leaves the cursor dirty, "
           "and the broker's periodic flush (managedLedgerCursorPositionFlushSeconds) "
           "stores it",
           "acknowledgements within a second of the cursor's last write are answered and "
           "applied in memory but stored only if a later one writes the cursor: the last "
           "second's before a subscription goes quiet never reach the stored cursor, and "
           "a new owner would deliver them again"),
    Mutant("producer-name-not-exclusive", "broker front end",
           "Pulsar's AbstractTopic.internalAddProducer: a producer name is unique on a "
           "topic (a second one is refused with ProducerBusy)",
           "two producers write under one name: their sequence ids interleave, and "
           "deduplication by producer name and sequence id would drop one's messages"),
    Mutant("receipt-names-latest-write", "broker front end",
           "Pulsar's MessagePublishContext.completed: each SEND_RECEIPT carries the ledger "
           "and entry id of that SEND's own entry",
           "a receipt names the entry of the producer's newest SEND: with one send in "
           "flight the same, with several another message's position, so two values are "
           "acknowledged at one position (forked-position)"),
    Mutant("exclusive-producer-not-enforced", "broker front end",
           "PIP-68: an Exclusive producer is the topic's single writer; others are "
           "refused (ProducerFenced, ProducerBusy)",
           "a second writer is accepted beside an exclusive one: interleaved history"),
    Mutant("deliver-at-ignored", "broker front end",
           "PIP-26 delayed delivery: a Shared or Key_Shared subscription holds a message "
           "until its deliver_at_time",
           "delayed messages are dispatched at once"),
    Mutant("frame-limit-without-padding", "broker front end",
           "Pulsar's Commands.MESSAGE_SIZE_FRAME_PADDING: the frame limit is the max "
           "message size plus room for the command and metadata",
           "a full-size message or chunk is refused by closing the connection; the client "
           "reconnects and resends for ever, its send never completing (not even at its send "
           "timeout)"),
    Mutant("seek-keeps-redelivery-state", "broker front end",
           "Pulsar's PersistentSubscription.resetCursor: a seek disconnects the consumers "
           "and starts the subscription over at the new position, forgetting what was out "
           "at them",
           "after a seek, the messages that were out at the consumers are never delivered "
           "again: the subscription still counts them as out at consumers that are gone"),
    Mutant("closed-consumer-keeps-unacked", "subscription",
           "Pulsar's PersistentDispatcherMultipleConsumers.removeConsumer: when a consumer "
           "closes or its connection drops, its unacknowledged messages are redelivered to "
           "the subscription's other consumers",
           "messages that were out at a consumer that closed or crashed are never delivered "
           "again: the subscription's backlog never drains"),
    Mutant("cumulative-ack-through-dispatched", "subscription",
           "Pulsar's PersistentSubscription.acknowledgeMessage: a cumulative "
           "acknowledgement moves the mark-delete to the position it names, no further",
           "a cumulative acknowledgement also acknowledges what was dispatched to its "
           "consumer after the message it names: what that consumer held unread when it "
           "crashed is never delivered again (lost)"),
    Mutant("nack-not-redelivered", "subscription",
           "Pulsar's PersistentDispatcherMultipleConsumers.redeliverUnacknowledgedMessages: "
           "the positions a consumer asks for again (its negative acknowledgements) are "
           "added to the messages to replay",
           "a negatively acknowledged message of a Shared or Key_Shared subscription is "
           "forgotten, never delivered again: the subscription's backlog never drains"),
    Mutant("schema-compatibility-unchecked", "schema registry",
           "Pulsar's schema registry: a schema that differs from a topic's is registered "
           "only if the namespace's compatibility strategy (FULL by default) accepts it",
           "a producer with an incompatible schema is let in: consumers of the topic meet "
           "messages their schema cannot decode"),
    Mutant("partition-count-not-reported", "broker front end",
           "Pulsar's PARTITIONED_METADATA: the broker answers a partitioned topic's stored "
           "partition count, from which the client builds its per-partition producers and "
           "consumers",
           "the client treats a partitioned topic as one topic: every message lands in a "
           "topic beside the partitions, which stay empty"),
    Mutant("dedup-state-lost-on-owner-change", "broker front end",
           "Pulsar's MessageDeduplication: a topic's new owner rebuilds the sequence ids "
           "from the `pulsar.dedup` cursor's snapshot and the entries after it before "
           "taking producers",
           "after an unload or owner change a producer's resend of a stored message is "
           "stored again: a duplicate with deduplication on"),
    # --- scalable topics ---------------------------------------------------------------
    Mutant("metadata-before-children", "scalable topic controller",
           "PIP-468 split/merge protocol: children and their cursors exist before the "
           "metadata CAS (step 4 after step 2)",
           "the layout names the children while the parents, terminated only after it, "
           "still take writes: dual writes (and lost messages when a consumer attaches to "
           "a child before its cursors exist)"),
    Mutant("skip-terminate", "scalable topic controller",
           "PIP-468 split/merge step 3: terminate the parents before the CAS",
           "a parent keeps taking writes after a child did: dual writes"),
    Mutant("child-cursor-at-latest", "scalable topic controller",
           "PIP-468 split/merge step 2: children's cursors start at Earliest",
           "messages written to a child before the consumer attaches are lost"),
    Mutant("merge-one-parent-subscriptions", "scalable topic controller",
           "PIP-468 merge step 1: the union of both parents' subscriptions",
           "a subscription of the other parent misses the merged segment: lost messages"),
    Mutant("layout-without-cas", "scalable topic controller",
           "PIP-468 split/merge step 4: the layout is replaced by a compare-and-set, which "
           "fails when another operation modified the metadata concurrently, and is retried",
           "a layout another writer stored between the controller's read and its step 4 is "
           "overwritten: the segments it made active vanish from the layout while they "
           "hold messages"),
    Mutant("no-roll-forward", "scalable topic controller",
           "PIP-468 split/merge step 3 before step 4, and failover: a parent is terminated "
           "before the CAS, so a new leader must finish a change its predecessor left "
           "between the two",
           "a leader that finds a half-done split or merge forgets it: the terminated "
           "parents stay ACTIVE in the layout and refuse every write to their hashes "
           "until some later change happens to seal them"),
    Mutant("admin-range-start-exclusive", "admin API",
           "PIP-468 metadata format: a segment's `hashRange` is `[start, end]` with both "
           "ends inclusive, in the metadata the admin API shows as in the DAG clients "
           "route by",
           "the admin API writes each range's start one past the segment's first hash, so "
           "that hash belongs to no segment there: a send keyed onto it, stored where the "
           "DAG routes it, lies outside its segment's range (misrouted)"),
    Mutant("no-grace-period", "subscription coordinator",
           "PIP-468 consumer session lifecycle: a disconnected consumer keeps its "
           "assignment for the grace period",
           "assignments churn on every reconnect or controller failover"),
    Mutant("children-before-parent-drained", "subscription coordinator",
           "PIP-460/PIP-468 ordering: a stream subscription gets a child only once every "
           "parent is drained",
           "a key's messages delivered out of order across a split"),
    # --- geo-replication and PIP-33 ----------------------------------------------------
    Mutant("partial-snapshot", "replicated subscriptions",
           "PIP-33 (004): a snapshot completes only with a response from every cluster",
           "failover moves a subscription past messages not yet replicated: lost"),
    Mutant("single-round", "replicated subscriptions",
           "PIP-33 (004): with more than two clusters the snapshot takes two rounds",
           "failover between three clusters loses messages"),
    Mutant("snapshot-while-disconnected", "replicated subscriptions",
           "PIP-33 (004) limitations: no snapshot while a replicator is disconnected",
           "snapshots among the clusters in reach count the unreachable cluster's messages "
           "that never reached us: lost after failover"),
    Mutant("snapshot-never-times-out", "replicated subscriptions",
           "PIP-33 (004): a snapshot a region does not answer within a timeout is aborted "
           "(`snapshot_timeout_s`)",
           "an unanswered snapshot stays pending for ever: a topic's pending snapshots "
           "grow without bound, and an answer arriving long after still completes one"),
    Mutant("update-past-mark-delete", "replicated subscriptions",
           "PIP-33 (004) / 002: only a snapshot at or before the mark-delete position may "
           "drive an update",
           "the remote subscription moves past unacknowledged messages: lost"),
    Mutant("replicated-from-ignored", "geo-replication",
           "the geo-replication source walk-through: a message that replication brought "
           "here (`replicated_from` set) is not replicated again; only a cluster's own "
           "messages go out",
           "every message travels back and forth between the clusters for ever, stored "
           "at a new position on each arrival: one value at many positions"),
    Mutant("replicator-acks-before-receipt", "geo-replication",
           "002 (PersistentReplicator): the replicator acknowledges an entry on its cursor "
           "only once the remote cluster's receipt for it came back",
           "entries sent to a remote broker that dies before storing them are never sent "
           "again: the remote cluster lacks them for good (lost in its subscriptions)"),
    Mutant("markers-dispatched", "replicated subscriptions",
           "PIP-33 (004): snapshot markers are written into the topic for the brokers; the "
           "dispatcher acknowledges them itself and never hands them to consumers",
           "consumers receive the markers as messages nobody sent (unexpected)"),
    Mutant("update-creates-at-latest", "replicated subscriptions",
           "002: a subscription created by an update marker starts where the snapshot says",
           "messages between the snapshot and creation are lost in the remote cluster"),
    # --- tenant migration --------------------------------------------------------------
    Mutant("migration-out-of-order", "lookup service (tenant migration)",
           "003's five migration steps: switch the tenant's clients (step 4) only once "
           "each subscription's progress is in the target (step 3), and let them in only "
           "once the source has replicated its last writes",
           "clients switched before their progress reach a target that lacks the messages "
           "they had not acknowledged yet in the source: lost"),
)}


class UnknownMutant(ValueError):
    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(CATALOGUE))
        super().__init__(f"unknown mutant {name!r}; known mutants: {known}")
        self.name = name


@dataclass(frozen=True)
class Mutants:
    """The set switched on in one process. Asking for a name outside the catalogue is a
    programming error and raises, so a misspelt switch can never read as 'off'."""

    enabled: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name in self.enabled:
            if name not in CATALOGUE:
                raise UnknownMutant(name)

    @classmethod
    def of(cls, names: Iterable[str]) -> Mutants:
        return cls(frozenset(n.strip() for n in names if n.strip()))

    @classmethod
    def parse(cls, text: str) -> Mutants:
        """From the `--mutants a,b` spelling every node's command line uses."""
        return cls.of(text.split(","))

    def on(self, name: str) -> bool:
        if name not in CATALOGUE:
            raise UnknownMutant(name)
        return name in self.enabled


NONE = Mutants()


if __name__ == "__main__":
    # `python -m impl.mutants`: the catalogue's names, one per line. The harness reaches the
    # reference implementation only through its processes, and asks this way which names a
    # scenario may switch on.
    print("\n".join(sorted(CATALOGUE)))
