"""A workload's settings, as the scenario's `[workload]` table gives them."""

from __future__ import annotations

from dataclasses import dataclass

WORKLOADS = ("topic", "scalable", "geo", "migration", "contract", "auth")
SUBSCRIPTION_MODES = ("exclusive", "failover", "shared", "key_shared")
NACK_MODES = ("shared", "key_shared")
"""The subscription modes `nack_share` is taken in. In the others the client asks for
every unacknowledged message again, not the one negatively acknowledged, and that races
with its own acknowledgements on their way: a message the broker sends again just before
its acknowledgement arrives is delivered after an acknowledgement the cursor confirms,
which a history cannot tell from a redelivery of an acknowledged message."""


@dataclass(frozen=True)
class WorkloadSettings:
    """The scenario's `[workload]` table: what drives the clients, and how hard."""

    kind: str = "scalable"
    rate: int = 100
    """Operations per second across all clients: every load loop is bounded."""
    keys: int = 16
    producers: int = 2
    consumers: int = 2
    subscription_mode: str = "failover"
    """How the consumers share their one subscription (`topic` workload)."""
    drain_quiet_s: float = 3.0
    """The final drain ends once no consumer has received anything for this long."""
    drain_timeout_s: float = 60.0
    """...or, still receiving (or with a backlog left), gives up after this long: `info`."""
    initial_segments: int = 2
    """Segments a scalable topic is created with (`scalable` workload)."""
    layout_interval_s: float = 4.0
    """Mean time between the admin driver's splits and merges (`scalable` workload)."""
    layout_until_s: float = 0.0
    """The admin driver starts splits and merges only in this many first seconds of the
    load (`scalable` workload; 0: throughout). A change the nemesis leaves half done then
    stays as the system leaves it: no later change of the driver's finishes it."""
    processes: int = 1
    """Logical processes per producer (`topic`, `geo` and `migration` workloads), each with
    one send in flight: a producer has this many sends outstanding at once."""
    send_timeout_s: float = 10.0
    """How long a send may wait before it is given up as `info`; the process goes on under a
    fresh id. Below a fault's length, sends are still invoked while the fault lasts."""
    edge_key_share: float = 0.25
    """The share of sends keyed to hash onto the first or last hash of an active segment
    (`scalable` workload), each edge in turn: random keys almost never land there, where
    an off-by-one in routing lives."""
    layout_lag_ms: float = 0.0
    """How late producers act on a new layout (`scalable` workload): producer n routes by a
    pushed DAG n times this long after it arrives, so around a split or merge one producer
    writes to the children while another still writes to the parents, which a correct
    controller has terminated by then."""
    late_subscription: bool = False
    """A third subscription of the `scalable` workload, `late` (mode `queue`), made with the
    others but read only in the drain, by a consumer that starts then and follows the
    topic's DAG as the stored metadata gives it: a client that arrives after the load. A
    segment the stored layout lost, whose writes the live consumers read as they came,
    is missing for it: `lost`. Off by default, as it reads the whole run again in the
    drain."""
    merge_union_probe: bool = False
    """Before each merge of the `scalable` workload, give each parent a subscription the
    other has not (through the Segments admin API), and after it probe that the merged
    segment holds both: PIP-468's union of the parents' subscriptions, which parents that
    hold the same ones cannot show (harness/workloads/merge_probe.py)."""
    process_ms: float = 0.0
    """How long a consumer works on each message before it acknowledges it (`scalable` and
    `topic` workloads): above the time between messages, the consumers fall behind; a
    scalable topic's splits and merges then find a backlog on their parents, where ordering
    bugs live, and a topic's backlog outgrows what the consumers' receiver queues hold."""
    receiver_queue: int = 100
    """How many messages a consumer of the `topic` workload lets the broker push ahead of
    what it has read: with lagging consumers the rest of the backlog waits at the broker,
    to be read from storage, and a crash takes back up to this many messages at once."""
    nack_share: float = 0.0
    """The share of deliveries a consumer of the `topic` workload negatively acknowledges
    instead of acknowledging (seeded per consumer); the client asks the broker for them
    again after `NACK_DELAY_MS`. Recorded as a `recv` with no `ack`."""
    crash_interval_s: float = 0.0
    """Mean time between consumer crashes while the load runs (`topic` workload; 0: none).
    A crashing consumer takes a few messages without acknowledging them and closes; a new
    consumer takes its place. The broker owes those messages to the subscription again,
    which no other loop exercises: every other consumer acknowledges all it receives."""
    consumer_lag_s: float = 1.5
    """How long after its publication the replicated subscription's consumers handle a
    message (`geo` and `migration` workloads): at a failover or a migration's switch the
    messages of the last this-many seconds were delivered but not acknowledged, and the
    cluster taken over must deliver them again; the longer it is, the further a cluster's
    copy of the subscription trails the newest messages."""
    failover_every_s: float = 6.0
    """About how often the replicated subscription's consumers move to the next cluster
    (`geo` workload), evenly spaced over the load, at least once."""
    groups: tuple[str, ...] = ()
    """The probe groups to run, by name (`contract` workload; all when empty): a scenario
    about one promise runs only the probes of that promise."""

