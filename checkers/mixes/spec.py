"""What a mix is: `MixSpec`, the knobs of a run to generate, and the benchmark's `MIXES`.
Kept apart from the generator so that every module of the plan can read a spec without
importing the rest."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class MixSpec:
    """A run to generate. The counts of crashes, failovers, splits and merges are the run's
    story, whatever its size; `events` sets the volume and, with `rate`, the run's length."""

    events: int = 20_000_000
    """About how many events the history has (the number of messages is sized to it)."""
    seed: int = 0
    """Seeds every random choice: one spec and one `inject` give one history."""
    producers: int = 8
    """Producer workers; even ones write in cluster a, odd ones in cluster b."""
    consumers: int = 6
    """Consumers of `live` connected at once, each owning a share of the keys."""
    keys_per_producer: int = 64
    """Keys each producer writes; a key belongs to one producer, so its sends are ordered."""
    rate: float = 1500.0
    """Messages per second over all producers; a run is never shorter than MIN_DURATION_S,
    so small histories have a lower rate."""
    redelivery: float = 0.05
    """Share of `live` deliveries followed by a redelivery of the message, before any ack."""
    crashes: int = 12
    """Consumer crashes, each followed by a replacement (fewer when the run cannot space
    them 5 s from each other and from failovers)."""
    failovers: int = 4
    """Failovers of `live` between the clusters: a to b, b to a, ..."""
    splits: int = 6
    """Segment splits over the run (the topic starts with one segment)."""
    merges: int = 2
    """Merges of two adjacent segments over the run."""
    faults_per_minute: float = 2.0
    """Fault density: nemesis faults (partition, kill, pause, cut-wan and instants) per
    minute of the run."""
    fault_error_share: float = 0.3
    """Share of the sends invoked in a fault's cluster during it that complete `fail`, or
    `info` for each producer's first (it then waits out a timeout); half as many of its
    acks complete `fail` or `info`."""
    cursor_ack_share: float = 0.7
    """Share of individual acks confirmed by a cursor reading rather than the client."""
    cumulative_share: float = 0.1
    """Share of `audit`'s acks that are cumulative. `live`'s never are: Pulsar refuses
    cumulative acknowledgements on Shared and Key_Shared subscriptions."""
    layout_interval_s: float = 4.0
    """How often the layout is observed besides each epoch (large `detail`s)."""
    key_bytes: int = 0
    """Bytes of every key: its name `k{n}`, then `_` and random letters and digits up to
    this length (a name as long stays whole); 0, the name alone."""
    value_bytes: int = 0
    """Bytes of every value, sent or injected: its name (`w{producer}-{seq}`, or `u{n}`
    for one nobody sent) padded as keys are; 0, the name alone."""


MIXES: dict[str, MixSpec] = {
    "default": MixSpec(),
    "many-keys": MixSpec(keys_per_producer=25_000),
    "heavy-redelivery": MixSpec(redelivery=0.35, consumers=12, crashes=40),
    "untuned": MixSpec(producers=200, keys_per_producer=500, cumulative_share=0.5,
                       key_bytes=100, value_bytes=200),
}
"""The benchmark's mixes at 20 million events: a long faulted run; the same with 200,000
keys; one where a third of the deliveries are redelivered; and `untuned`, the shape of a
run the bench was not tuned on: 200 producers (each a client process, 100 per cluster)
over 100,000 keys, enough for thousands of injected anomalies of each kind on keys of
their own, keys of 100 bytes and values of 200, and half of the cumulative-capable acks
cumulative. Those are `audit`'s alone: `live` is a key_shared subscription, and Pulsar
refuses cumulative acknowledgements on Shared and Key_Shared subscriptions."""


def scaled(spec: MixSpec, events: int) -> MixSpec:
    """The same run with about `events` events: the same story, more or fewer messages."""
    return replace(spec, events=events)
