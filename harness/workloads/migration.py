"""The `migration` workload: the tenant-migration article's migration, which the Target's
lookup service runs (`POST /lookup/v2/tenants/{tenant}/migration`; ours is
impl/lookup/migration.py), asked for once in the middle of the load while the tenant's
producers and consumers keep going through the lookup service, with the official
`pulsar-client`.

The run's first cluster is the source, its second the target. The Target's lookup service
(for ours, `harness/targets/lookup.py`) knows both and sends the tenant `starquake-move` to
the source; the tenant and its namespace `starquake-move/moving` exist there only. The clients'
service URL is the lookup service's. Producers send keyed messages one at a time; the
subscription `live` (made with `replicate_subscription_state`, which step 3 needs) is
read by the scenario's consumers throughout.

A third of the way into the load, the admin driver asks the lookup service to move the
tenant to the target and follows the migration's report (`GET` every `POLL_S`). Each step
it sees is recorded by process `admin` as f `migrate`, in the order the service ran
them: `invoke` with the step's name as `value` and `detail`
`{"step": ..., "from": source, "to": target}`, then `ok`, or `info` with the service's
message when it failed (the migration then stops there). At the switch the source
unloads the namespace, the clients look their topic up again and land in the target.

A client does not learn which cluster served it. Sends record as `cluster` the cluster
the lookup service assigned the tenant when they began; deliveries the source until the
target shows itself after the switch began (`_delivered_from`). No operation records a
`position`: a position means something only in its cluster, so `forked-position` has
nothing to judge here. What this workload proves is `lost` (nothing sent `ok` is
missing from `live`, wherever it was read), `unexpected`, and with an ordered
subscription mode `order` within each cluster.

Acknowledgements are settled by the source cluster's cursor of `live`
(`harness.workloads.cursors`), compared with the position the client was given, until
the switch begins: up to then the source alone serves the tenant, so a delivered
position is certainly the source's. From the switch on the client may be served by
either cluster without the harness knowing which, so acks still pending then, and every
later one, complete `info`, and `duplicate` judges the acks confirmed before the switch.

The drain reads `live` in the target until quiet with no backlog there.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass

import pulsar

from harness.admin_api import AdminError, admin_request
from harness.credentials import client_authentication
from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.client_log import client_logger
from harness.workloads.cursors import CursorObserver
from harness.workloads.loops import DeliveryClock, drain_fields, run_workers, wait_until_drained
from harness.workloads.official_client import (
    LIVE,
    OPEN_TIMEOUT,
    RECEIVE_POLL_MS,
    close_client,
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

TENANT_PREFIX = "starquake-move"
"""The moving tenant is `starquake-move-<the run's topic name>`: its own in every run, since
a Target that outlives runs keeps the tenants earlier runs moved."""
NAMESPACE = "moving"
STARTS_AT = 1 / 3
"""The migration starts this far into the load."""
STEP_TIMEOUT_S = 30.0
"""How long each waiting step of the migration may wait."""
STEPS = 5
POLL_S = 0.1
"""How often the admin driver reads the migration's report: the switch must be seen
before a client served by the target acknowledges (see above)."""
MIGRATE = "migrate"


def step_changes(steps: list[dict[str, str]],
                 seen: dict[str, str]) -> list[tuple[str, str, str]]:
    """What a migration report shows beyond `seen` (each step's state as recorded, which
    this updates), as `(kind, step, message)` in the order the service ran the steps:
    `invoke` for a step first seen, then `ok` once it is done or `info` once it failed."""
    changes = []
    for step in steps:
        name, state = step["step"], step["state"]
        if name not in seen:
            changes.append(("invoke", name, ""))
            seen[name] = "running"
        if seen[name] == "running" and state != "running":
            changes.append(("ok" if state == "done" else "info", name, step.get("message", "")))
            seen[name] = state
    return changes


class MigrationWorkload:
    @dataclass(frozen=True)
    class Knobs(OfficialClientKnobs, ReplicatedSubscriptionKnobs):
        """Only the knobs it shares with the geo workload."""

    def __init__(self, context: WorkloadContext) -> None:
        self.source, self.target = context.clusters[0], context.clusters[1]
        name = context.topic.rsplit("/", 1)[-1]
        self.tenant = f"{TENANT_PREFIX}-{name}"
        self.topic = f"persistent://{self.tenant}/{NAMESPACE}/{name}"
        self.context = context
        self.knobs = context.settings.knobs_as(MigrationWorkload.Knobs)
        self._ids = SequentialIds("p")
        if context.lookup is None:
            raise WorkloadOpenFailed("the migration workload needs a Target with a lookup "
                                     "service, and this one has none")
        self._lookup = context.lookup
        self._client: pulsar.Client | None = None
        self._producers: list[pulsar.Producer] = []
        self._serving = self.source.name
        """The cluster the lookup service sends the tenant to."""
        self._delivery_lock = threading.Lock()
        self._received: set[str] = set()
        self._switching = False
        self._delivering = self.source.name
        """The cluster the consumers are served by, as their deliveries show it."""
        self._closing = threading.Event()
        self._consumers: list[tuple[threading.Thread, pulsar.Consumer]] = []
        self._deliveries = DeliveryClock()
        self._cursors = CursorObserver(context.history, self._ids)
        self._cursors.watch(self.source.name, self.source.admin_urls, self.topic)

    # --- open ----------------------------------------------------------------------------

    def open(self) -> None:
        c = self.context
        for cluster in (self.source, self.target):
            admin_request(self._lookup.admin_url, "PUT", f"/lookup/v2/clusters/{cluster.name}",
                          {"brokerServiceUrl": cluster.service_urls[0],
                           "serviceUrl": cluster.admin_urls[0]})
        admin_request(self._lookup.admin_url, "PUT", f"/lookup/v2/tenants/{self.tenant}",
                      {"cluster": self.source.name})
        source_admin = self.source.admin_urls[0]
        admin_request(source_admin, "PUT", f"/admin/v2/tenants/{self.tenant}",
                      {"allowedClusters": [self.source.name]})
        admin_request(source_admin, "PUT", f"/admin/v2/namespaces/{self.tenant}/{NAMESPACE}", {})
        self._client = client = pulsar.Client(
            self._lookup.service_url, operation_timeout_seconds=10,
            authentication=client_authentication(),
            logger=client_logger(c.client_log))
        deadline = time.monotonic() + OPEN_TIMEOUT
        for n in range(c.settings.consumers):
            process = ClientProcess(c.history, self._ids)
            consumer = subscribe_recorded(
                process, client, self.topic, LIVE, self.knobs.subscription_mode, deadline,
                replicated=True, fields={"consumer": f"c{n}", "cluster": self._serving})
            thread = threading.Thread(target=self._consume, args=(process, consumer, f"c{n}"),
                                      name=f"consumer-c{n}", daemon=True)
            self._consumers.append((thread, consumer))
        self._producers = [retry_until(self._new_producer, deadline,
                                       f"create a producer on {self.topic}")
                           for _ in range(c.settings.producers)]
        self._cursors.start()
        for thread, _ in self._consumers:
            thread.start()

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        producers = len(self._producers)
        migrate_at = time.monotonic() + (deadline - time.monotonic()) * STARTS_AT

        def work(n: int) -> None:
            if n < producers:
                produce(self.context, self._ids, n, producers, self._producers[n],
                        self._new_producer, self._send_fields, deadline, stop,
                        position=False)
            elif not stop.wait(max(0.0, migrate_at - time.monotonic())):
                self._migrate()

        run_workers(work, producers + 1, "migration", deadline, self.knobs.send_timeout_s + 5)

    def _new_producer(self) -> pulsar.Producer:
        assert self._client is not None, "open() first"
        return self._client.create_producer(self.topic, **producer_options(self.knobs))

    def _send_fields(self, key: str) -> dict[str, str]:
        return {"key": key, "topic": self.topic, "cluster": self._serving}

    def _migrate(self) -> None:
        """Ask for the migration, then record each step as the service reports it."""
        history = self.context.history
        detail = {"from": self.source.name, "to": self.target.name}
        path = f"/lookup/v2/tenants/{self.tenant}/migration"
        seen: dict[str, str] = {}
        """Each reported step's state as recorded."""
        try:
            report = admin_request(self._lookup.admin_url, "POST", path,
                                   {"cluster": self.target.name,
                                    "timeoutSeconds": STEP_TIMEOUT_S})
            deadline = time.monotonic() + STEPS * STEP_TIMEOUT_S + 30
            while True:
                self._record_steps(report["steps"], seen, detail)
                if report["state"] != "running":
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the migration still runs after {STEPS} steps' "
                                       f"timeouts; last report {report}")
                time.sleep(POLL_S)
                report = admin_request(self._lookup.admin_url, "GET", path)
        except (AdminError, OSError, KeyError, TypeError) as exc:
            log.warning("migration failed: %s", exc)
            step = next(reversed(seen), "start")
            history.record("admin", "info", MIGRATE, value=step, error=type(exc).__name__,
                           detail={"step": step, "message": str(exc), **detail})

    def _record_steps(self, steps: list[dict[str, str]], seen: dict[str, str],
                      detail: dict[str, str]) -> None:
        history = self.context.history
        for kind, name, message in step_changes(steps, seen):
            if kind == "invoke":
                if name == "switch":  # from here a position may be either cluster's
                    self._cursors.unwatch(self.source.name, self.topic)
                    with self._delivery_lock:
                        self._switching = True
                history.record("admin", "invoke", MIGRATE, value=name,
                               detail={"step": name, **detail})
            elif kind == "ok":
                self._step_done(name, detail)
            else:
                history.record("admin", "info", MIGRATE, value=name, error="MigrationFailed",
                               detail={"step": name, "message": message, **detail})

    def _step_done(self, step: str, detail: dict[str, str]) -> None:
        self.context.history.record("admin", "ok", MIGRATE, value=step,
                                    detail={"step": step, **detail})
        if step == "switch":
            self._serving = self.target.name

    # --- consuming -----------------------------------------------------------------------

    def _consume(self, process: ClientProcess, consumer: pulsar.Consumer, name: str) -> None:
        """Receive, wait out `consumer_lag_s`, record, acknowledge, until `close()`; the
        client follows the topic to the target cluster by itself."""
        while not self._closing.is_set():
            message = next_message(consumer, self._closing)
            if message is None:
                continue
            serving = self._delivered_from(message.data().decode(errors="replace"))
            if not wait_out_lag(message, self.knobs.consumer_lag_s, self._closing):
                return
            self._deliveries.tick()
            record_and_acknowledge(process, consumer, message, {
                "topic": self.topic, "subscription": LIVE, "consumer": name,
                "cluster": serving}, self._cursors, position=False)

    def _delivered_from(self, value: str) -> str:
        """The cluster a message just taken from the client's queue came from. Until the
        switch begins, the source. After it, the queue goes on handing out what the
        source sent until the client has reconnected, which it does not report; the
        target shows itself by starting over from its copy of the subscription, which
        lies at or before the source's position: the first value received a second
        time marks the move, for every consumer."""
        with self._delivery_lock:
            if self._switching and value in self._received:
                self._delivering = self.target.name
            self._received.add(value)
            return self._delivering

    # --- drain and close -----------------------------------------------------------------

    def drain(self) -> bool:
        c = dataclasses.replace(self.context, topic=self.topic, cluster=self._serving)
        c.history.record("harness", "invoke", "drain", **drain_fields(c))
        serving = self.target if self._serving == self.target.name else self.source
        drained = wait_until_drained(
            c, time.monotonic(), self._deliveries,
            lambda: subscription_backlogs(serving.admin_urls, self.topic))
        self._cursors.finish()  # the last reading, after the drain
        return drained

    def close(self) -> None:
        self._cursors.finish()
        self._closing.set()
        for thread, _ in self._consumers:
            if thread.ident is not None:  # an open that failed started none of them
                thread.join(RECEIVE_POLL_MS / 1000 * 5 + self.knobs.consumer_lag_s + 1)
        client, self._client = self._client, None
        close_client(client)
