"""The `geo` workload: one topic geo-replicated across every cluster of the run, producers
in each cluster, and a replicated subscription (PIP-33) whose consumers fail over from one
cluster to the next while the load goes on, with the official `pulsar-client`.

Before anything is sent, every cluster learns the others and the namespace
`starquake/geo` is replicated to all (`geo_link.py`). Producer n sends in cluster
n mod (number of clusters), paced like the `topic` workload's, each `send` recording its
`cluster`. Keys are the cluster's own (`a-k3`): replication keeps the order of one
origin's messages, while two clusters' writes of one key have no order between them.

The live subscription `live` is made with `replicate_subscription_state`, so each cluster
keeps the others' progress on it. Its consumers read in one cluster at a time; at evenly
spaced moments of the load they are closed there and subscribe again in the next cluster:
a `failover` by a client process of its own, `invoke` then `ok` with `detail`
`{"from": a, "to": b}`. Every `recv` records the cluster it came from, so the `lost`
checker looks for a message in every cluster the subscription was read in.

Consumers handle each message `consumer_lag_s` (1.5 s by default) after it was published,
as a consumer with work to do would: at a failover the subscription then has messages
delivered to the client but not yet handled nor acknowledged, which the new cluster must
deliver again.
A cluster whose copy of the subscription was moved past them (the
`update-past-mark-delete` mutant) never delivers them: `lost`.

Acknowledgements are settled by each cluster's cursor of the subscription
(`harness.workloads.cursors`: `ok` once a reading in the cluster the message was
delivered in covers it, else `info`), so `duplicate` and `duplicate-window` judge the
confirmed ones.

The drain happens in the cluster of the last failover: `live`'s consumers read on, and
in every cluster a late subscription `late-<cluster>` (not replicated, made before the
first send, read only in the drain) proves that every message reached every cluster. It
ends once nothing was received for `drain_quiet_s`, no subscription read has a backlog
and no replicator has anything left to send.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar

from harness.admin_api import AdminError, admin_request
from harness.credentials import client_authentication
from harness.target import TargetCluster
from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.client_log import client_logger
from harness.workloads.cursors import CursorObserver
from harness.workloads.geo_link import replicate_namespace
from harness.workloads.knobs import knob
from harness.workloads.loops import DeliveryClock, drain_fields, run_workers, wait_until_drained
from harness.workloads.official_client import (
    LIVE,
    OPEN_TIMEOUT,
    RECEIVE_POLL_MS,
    close_client,
    close_quietly,
    next_message,
    produce,
    producer_options,
    record_and_acknowledge,
    retry_until,
    subscribe_recorded,
    wait_out_lag,
)
from harness.workloads.shared_knobs import OfficialClientKnobs, ReplicatedSubscriptionKnobs
from harness.workloads.stats import subscription_backlogs
from history.writer import ClientProcess, SequentialIds

log = logging.getLogger(__name__)

NAMESPACE = "starquake/geo"
FAILOVER_TIMEOUT_S = 60.0


def geo_topic(context: WorkloadContext) -> str:
    """The run's topic, in the replicated namespace."""
    return f"persistent://{NAMESPACE}/{context.topic.rsplit('/', 1)[-1]}"


def failover_plan(clusters: Sequence[str], span_s: float,
                  every_s: float) -> list[tuple[float, str, str]]:
    """(offset from the start of the load, from, to) of each failover: about one every
    `every_s`, at least one, evenly spaced, cycling through the clusters."""
    count = max(1, round(span_s / every_s))
    return [(span_s * (k + 1) / (count + 1), clusters[k % len(clusters)],
             clusters[(k + 1) % len(clusters)]) for k in range(count)]


@dataclass
class _Reader:
    """One consumer of one subscription in one cluster, and the thread reading it."""

    process: ClientProcess
    name: str
    subscription: str
    cluster: str
    consumer: pulsar.Consumer
    lag_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class GeoWorkload:
    @dataclass(frozen=True)
    class Knobs(OfficialClientKnobs, ReplicatedSubscriptionKnobs):
        failover_every_s: float = knob(6.0, "About how often the replicated subscription's "
                                            "consumers move to the next cluster.", above=0)
        """Evenly spaced over the load, at least once."""

    def __init__(self, context: WorkloadContext) -> None:
        self.topic = geo_topic(context)
        self.context = context
        self.knobs = context.settings.knobs_as(GeoWorkload.Knobs)
        self._ids = SequentialIds("p")
        self._clusters = {c.name: c for c in context.clusters}
        self._clients: dict[str, pulsar.Client] = {}
        self._producers: list[pulsar.Producer] = []
        self._readers: list[_Reader] = []
        self._live_cluster = context.clusters[0].name
        self._deliveries = DeliveryClock()
        self._cursors = CursorObserver(context.history, self._ids)
        for cluster in context.clusters:
            self._cursors.watch(cluster.name, cluster.admin_urls, self.topic)

    # --- open ----------------------------------------------------------------------------

    def open(self) -> None:
        c = self.context
        replicate_namespace(c.clusters, NAMESPACE)
        for name, cluster in self._clusters.items():
            self._clients[name] = pulsar.Client(
                cluster.service_url, operation_timeout_seconds=10,
                authentication=client_authentication(),
                logger=client_logger(c.client_log))
        deadline = time.monotonic() + OPEN_TIMEOUT
        live = self._subscribe_live(self._live_cluster, deadline)
        for name in self._clusters:  # each comes back in the drain
            self._subscribe(name, f"late-{name}", f"late-{name}", "exclusive", deadline,
                            replicated=False).consumer.close()
        self._producers = [retry_until(functools.partial(self._new_producer, n), deadline,
                                       f"create producer {n} on {self.topic}")
                           for n in range(c.settings.producers)]
        self._cursors.start()
        for reader in live:
            self._start(reader)

    def _subscribe_live(self, cluster: str, deadline: float) -> list[_Reader]:
        return [self._subscribe(cluster, f"c{n}-{cluster}", LIVE,
                                self.knobs.subscription_mode, deadline,
                                replicated=True)
                for n in range(self.context.settings.consumers)]

    def _subscribe(self, cluster: str, name: str, subscription: str, mode: str,
                   deadline: float, *, replicated: bool) -> _Reader:
        """Subscribe in `cluster`, recording each attempt; retried until `deadline`."""
        process = ClientProcess(self.context.history, self._ids)
        consumer = subscribe_recorded(process, self._clients[cluster], self.topic, subscription,
                                      mode, deadline, replicated=replicated,
                                      fields={"consumer": name, "cluster": cluster})
        lag = self.knobs.consumer_lag_s if replicated else 0.0
        return _Reader(process, name, subscription, cluster, consumer, lag)

    def _producer_cluster(self, worker: int) -> str:
        return self.context.clusters[worker % len(self.context.clusters)].name

    def _new_producer(self, worker: int) -> pulsar.Producer:
        return self._clients[self._producer_cluster(worker)].create_producer(
            self.topic, **producer_options(self.knobs))

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        producers = len(self._producers)
        plan = failover_plan(list(self._clusters), deadline - time.monotonic(),
                             self.knobs.failover_every_s)
        started = time.monotonic()

        def work(n: int) -> None:
            if n < producers:
                self._produce(n, deadline, stop)
            else:
                self._fail_over(plan, started, deadline, stop)

        run_workers(work, producers + 1, "geo", deadline, self.knobs.send_timeout_s + 5)

    def _produce(self, worker: int, deadline: float, stop: threading.Event) -> None:
        cluster = self._producer_cluster(worker)
        produce(self.context, self._ids, worker, len(self._producers), self._producers[worker],
                lambda: self._new_producer(worker),
                # Each cluster's own keys: replication keeps a key's order only per origin.
                lambda key: {"key": f"{cluster}-{key}", "topic": self.topic, "cluster": cluster},
                deadline, stop)

    def _fail_over(self, plan: list[tuple[float, str, str]], started: float,
                   deadline: float, stop: threading.Event) -> None:
        """Move `live`'s consumers at each planned moment, recorded as one `failover`."""
        process = ClientProcess(self.context.history, self._ids)
        for offset, source, target in plan:
            if stop.wait(max(0.0, started + offset - time.monotonic())) or \
                    time.monotonic() >= deadline:
                return
            fields = {"topic": self.topic, "subscription": LIVE, "cluster": target,
                      "detail": {"from": source, "to": target}}
            process.invoke("failover", value=LIVE, **fields)
            self._stop_readers([r for r in self._readers if r.subscription == LIVE])
            self._live_cluster = target
            try:
                readers = self._subscribe_live(target, time.monotonic() + FAILOVER_TIMEOUT_S)
            except WorkloadOpenFailed as exc:
                # Nobody reads `live` any more: the drain will time out, `lost` says unknown.
                process.complete("info", value=LIVE, error="subscribe-failed", **fields)
                log.warning("failover of %s to %s failed: %s", LIVE, target, exc)
                return
            process.complete("ok", value=LIVE, **fields)
            for reader in readers:
                self._start(reader)

    # --- consuming -----------------------------------------------------------------------

    def _start(self, reader: _Reader) -> None:
        self._readers.append(reader)
        reader.thread = threading.Thread(target=self._consume, args=(reader,),
                                         name=f"consumer-{reader.name}", daemon=True)
        reader.thread.start()

    def _consume(self, reader: _Reader) -> None:
        """Receive, wait out the consumer's lag, record, acknowledge, until stopped. A
        message received but not yet handled when the reader stops is left unacknowledged:
        the subscription delivers it again, wherever it is read next."""
        process, consumer = reader.process, reader.consumer
        fields = {"topic": self.topic, "subscription": reader.subscription,
                  "consumer": reader.name, "cluster": reader.cluster}
        while not reader.stop.is_set():
            message = next_message(consumer, reader.stop)
            if message is None:
                continue
            if not wait_out_lag(message, reader.lag_s, reader.stop):
                return
            self._deliveries.tick()
            record_and_acknowledge(process, consumer, message, fields, self._cursors)

    def _stop_readers(self, readers: list[_Reader]) -> None:
        for reader in readers:
            reader.stop.set()
        for reader in readers:
            if reader.thread is not None:
                reader.thread.join(RECEIVE_POLL_MS / 1000 * 5 + reader.lag_s + 1)
            close_quietly(reader.consumer)
            self._readers.remove(reader)

    # --- drain and close -----------------------------------------------------------------

    def drain(self) -> bool:
        """Read the late subscriptions in every cluster while `live` reads on in the last
        failover's cluster, until all is read and replicated (module docstring)."""
        c = dataclasses.replace(self.context, topic=self.topic, cluster=self._live_cluster)
        c.history.record("harness", "invoke", "drain", **drain_fields(c))
        started = time.monotonic()
        try:
            for name in self._clusters:
                self._start(self._subscribe(name, f"late-{name}", f"late-{name}", "exclusive",
                                            started + c.settings.drain_timeout_s,
                                            replicated=False))
        except WorkloadOpenFailed as exc:
            c.history.record("harness", "info", "drain", error="late-subscribe-failed",
                             detail={"message": str(exc)}, **drain_fields(c))
            self._cursors.finish()
            return False
        drained = wait_until_drained(c, started, self._deliveries, self._backlogs)
        self._cursors.finish()  # the last reading, after the drain
        return drained

    def _backlogs(self) -> dict[str, int] | None:
        """What is left to read or to replicate: `live` in its cluster, each late
        subscription in its own, every replicator; None when a cluster does not answer."""
        left: dict[str, int] = {}
        for name, cluster in self._clusters.items():
            subscriptions = subscription_backlogs(cluster.admin_urls, self.topic)
            replication = _replication_backlogs(cluster, self.topic)
            if subscriptions is None or replication is None:
                return None
            wanted = {f"late-{name}"} | ({LIVE} if name == self._live_cluster else set())
            left |= {f"{name}/{s}": n for s, n in subscriptions.items() if s in wanted}
            left |= {f"{name}->{remote}": n for remote, n in replication.items()}
        return left

    def close(self) -> None:
        self._cursors.finish()
        self._stop_readers(list(self._readers))
        clients, self._clients = self._clients, {}
        for client in clients.values():
            close_client(client)


def _replication_backlogs(cluster: TargetCluster, topic: str) -> dict[str, int] | None:
    """Remote cluster -> what this cluster's replicator has not sent yet."""
    path = "/admin/v2/" + topic.replace("://", "/") + "/stats"
    for url in cluster.admin_urls:
        try:
            stats = admin_request(url, "GET", path, timeout=3.0)
        except (AdminError, OSError, ValueError):
            continue
        return replication_backlogs_of(stats)
    return None


def replication_backlogs_of(stats: dict[str, Any]) -> dict[str, int]:
    """Remote cluster -> `replicationBacklog` of a topic's stats: the field Pulsar's
    `ReplicatorStats` has. (Our reference brokers also report it as `msgBacklog`; Pulsar
    does not, and a drain reading that saw nothing left while a replicator waited for a
    remote broker to come back.)"""
    return {remote: int(entry.get("replicationBacklog", 0))
            for remote, entry in stats.get("replication", {}).items()}
