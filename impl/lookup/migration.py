"""Moving a tenant to another cluster, as the lookup service runs it: the five steps of the
tenant-migration article ("Migrating Tenants across Clusters with Pulsar's
Geo-replication"), made through the two clusters' admin APIs and the lookup service's own
record of the tenant.

1. metadata: each cluster learns the other; the tenant is allowed in both and its
   namespaces exist in the target, replicating to both;
2. data: the source's namespaces replicate to the target too;
3. consumption progress: wait until every replicated subscription of the source exists
   in the target (PIP-33 updates; with `--replicate-individually-deleted` brokers they
   also carry what was acknowledged out of order) and the source's replication backlog
   to the target is empty;
4. switch: the tenant's lookups are held (answered "not ready") and the source unloads
   the namespaces' bundles, so every client lets go and looks its topics up again; once
   the source has replicated its last writes, the tenant's record names the target and
   the clients land there;
5. clean up: once what reached the source before the switch is replicated, the target
   stops replicating back and the source deletes the tenant's topics, namespaces and the
   tenant itself.

The order is the point: a client switched before step 3 reaches a target where its
subscription does not exist yet, or stands before messages that only the source holds
(the `migration-out-of-order` mutant). So is the hold in step 4: a producer let into the
target while the source still replicates its last writes would have its next messages
stored ahead of them, and a key's consumer would get them out of order. A migration lives
in the process that runs it; a lookup service restarted in the middle forgets it (a tenant
it held stays held), and the operator starts it again (every step can be repeated).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from impl.lookup.directory import ClusterRecord, TenantDirectory
from impl.mutants import NONE, Mutants

log = logging.getLogger(__name__)

METADATA, DATA, PROGRESS, SWITCH, CLEAN_UP = (
    "metadata", "data", "consumption progress", "switch", "clean up")
STEPS = (METADATA, DATA, PROGRESS, SWITCH, CLEAN_UP)
OUT_OF_ORDER = (METADATA, DATA, SWITCH, PROGRESS, CLEAN_UP)
"""The `migration-out-of-order` mutant's order: clients switched before their progress."""
POLL_S = 0.5
"""How often a waiting step asks the clusters again."""


class MigrationStuck(Exception):
    """A step did not finish in time; the message says which and what it waited for."""


class AdminRefused(Exception):
    """A cluster's admin API answered an error."""

    def __init__(self, method: str, url: str, status: int, reason: str) -> None:
        super().__init__(f"{method} {url}: {status} {reason}")
        self.status = status


@dataclass
class StepReport:
    name: str
    state: str = "running"
    """`running`, `done` or `failed`."""
    message: str = ""


@dataclass
class Migration:
    """One tenant's move; `run` makes it, `report` is what the API shows of it."""

    tenant: str
    source: ClusterRecord
    target: ClusterRecord
    directory: TenantDirectory
    session: aiohttp.ClientSession
    timeout_s: float
    """How long each waiting step may wait."""
    mutants: Mutants = NONE
    steps: list[StepReport] = field(default_factory=list)

    @property
    def state(self) -> str:
        if any(step.state == "failed" for step in self.steps):
            return "failed"
        if len(self.steps) == len(STEPS) and self.steps[-1].state == "done":
            return "done"
        return "running"

    def report(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "from": self.source.name, "to": self.target.name,
                "state": self.state,
                "steps": [{"step": s.name, "state": s.state, "message": s.message}
                          for s in self.steps]}

    async def run(self) -> None:
        order = OUT_OF_ORDER if self.mutants.on("migration-out-of-order") else STEPS
        actions: dict[str, Callable[[], Awaitable[None]]] = {
            METADATA: self._sync_metadata, DATA: self._replicate_data,
            PROGRESS: self._sync_progress, SWITCH: self._switch, CLEAN_UP: self._clean_up}
        for name in order:
            step = StepReport(name)
            self.steps.append(step)
            log.info("migration of %s to %s: %s", self.tenant, self.target.name, name)
            try:
                await actions[name]()
            except (TimeoutError, MigrationStuck, AdminRefused, aiohttp.ClientError) as exc:
                step.state, step.message = "failed", str(exc) or type(exc).__name__
                log.warning("migration of %s stopped at %s: %s", self.tenant, name,
                            step.message)
                return
            step.state = "done"

    # --- the clusters' admin APIs --------------------------------------------------------

    async def _call(self, cluster: ClusterRecord, method: str, path: str,
                    body: Any = None) -> Any:
        url = f"{cluster.admin_url.rstrip('/')}{path}"
        async with self.session.request(method, url, json=body) as response:
            raw = await response.read()
            if response.status >= 400:
                text = raw.decode(errors="replace")
                try:
                    reason = (await response.json()).get("reason", text)
                except (ValueError, aiohttp.ContentTypeError, AttributeError):
                    reason = text
                raise AdminRefused(method, url, response.status, reason)
            return await response.json(content_type=None) if raw else None

    async def _put_or_post(self, cluster: ClusterRecord, path: str, body: Any) -> None:
        """Create (PUT) or, when it exists, update (POST)."""
        try:
            await self._call(cluster, "PUT", path, body)
        except AdminRefused as exc:
            if exc.status != 409:
                raise
            await self._call(cluster, "POST", path, body)

    async def _namespaces(self) -> list[str]:
        """The tenant's namespaces in the source, `tenant/ns` each."""
        return list(await self._call(self.source, "GET", f"/admin/v2/namespaces/{self.tenant}"))

    async def _topics(self, cluster: ClusterRecord, namespaces: list[str]) -> list[str]:
        return [topic for namespace in namespaces
                for topic in await self._call(cluster, "GET",
                                              f"/admin/v2/namespaces/{namespace}/topics")]

    async def _stats(self, cluster: ClusterRecord, topic: str) -> dict[str, Any]:
        return await self._call(cluster, "GET",  # type: ignore[no-any-return]
                                f"/admin/v2/{topic.replace('://', '/')}/stats")

    # --- the steps -------------------------------------------------------------------------

    async def _sync_metadata(self) -> None:
        both = [self.source.name, self.target.name]
        for here, other in ((self.source, self.target), (self.target, self.source)):
            await self._put_or_post(here, f"/admin/v2/clusters/{other.name}",
                                    {"serviceUrl": other.admin_url,
                                     "brokerServiceUrl": other.broker_service_url})
            await self._put_or_post(here, f"/admin/v2/tenants/{self.tenant}",
                                    {"allowedClusters": both})
        for namespace in await self._namespaces():
            path = f"/admin/v2/namespaces/{namespace}"
            try:
                await self._call(self.target, "PUT", path, {"replication_clusters": both})
            except AdminRefused as exc:
                if exc.status != 409:
                    raise
                await self._call(self.target, "POST", f"{path}/replication", both)

    async def _replicate_data(self) -> None:
        for namespace in await self._namespaces():
            await self._call(self.source, "POST", f"/admin/v2/namespaces/{namespace}/replication",
                             [self.source.name, self.target.name])

    async def _waiting_for(self, namespaces: list[str], *, subscriptions: bool) -> list[str]:
        """What the source still has to hand to the target (empty when done)."""
        missing = []
        for topic in await self._topics(self.source, namespaces):
            stats = await self._stats(self.source, topic)
            replication = stats.get("replication", {}).get(self.target.name)
            if replication is None or replication["msgBacklog"] > 0:
                missing.append(f"{topic}: replication backlog to {self.target.name}")
            if not subscriptions:
                continue
            replicated = [name for name, sub in stats.get("subscriptions", {}).items()
                          if sub.get("isReplicated")]
            if replicated:
                there = (await self._stats(self.target, topic)).get("subscriptions", {})
                missing += [f"{topic}: subscription {name} in {self.target.name}"
                            for name in replicated if name not in there]
        return missing

    async def _wait(self, step: str, missing: Callable[[], Awaitable[list[str]]]) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                left = await missing()
            except (TimeoutError, AdminRefused, aiohttp.ClientError) as exc:
                left = [str(exc) or type(exc).__name__]
            if not left:
                return
            if time.monotonic() > deadline:
                raise MigrationStuck(f"{step}: still waiting after {self.timeout_s} s for "
                                     f"{'; '.join(left)}")
            await asyncio.sleep(POLL_S)

    async def _sync_progress(self) -> None:
        namespaces = await self._namespaces()
        await self._wait(PROGRESS, lambda: self._waiting_for(namespaces, subscriptions=True))

    async def _switch(self) -> None:
        """Hold the tenant's lookups, send its clients away from the source, wait for the
        source's last writes to reach the target, then let the clients into the target.
        If the source does not hand them over in time, the clients go back to it."""
        namespaces = await self._namespaces()
        if self.mutants.on("migration-out-of-order"):
            # Clients let into the target at once, before anything was handed over.
            await asyncio.to_thread(self.directory.assign, self.tenant, self.target.name)
            await self._unload(namespaces)
            return
        await asyncio.to_thread(self.directory.hold, self.tenant, self.target.name)
        try:
            await self._unload(namespaces)
            await self._wait(SWITCH, lambda: self._waiting_for(namespaces, subscriptions=False))
        except BaseException:
            await asyncio.to_thread(self.directory.assign, self.tenant, self.source.name)
            raise
        await asyncio.to_thread(self.directory.assign, self.tenant, self.target.name)

    async def _unload(self, namespaces: list[str]) -> None:
        """Unload every bundle of the namespaces in the source: their clients let go."""
        for namespace in namespaces:
            path = f"/admin/v2/namespaces/{namespace}"
            bundles = await self._call(self.source, "GET", f"{path}/bundles")
            for low, high in itertools.pairwise(bundles["boundaries"]):
                await self._call(self.source, "PUT", f"{path}/{low}_{high}/unload")

    async def _clean_up(self) -> None:
        namespaces = await self._namespaces()
        await self._wait(CLEAN_UP, lambda: self._waiting_for(namespaces, subscriptions=False))
        for namespace in namespaces:
            await self._call(self.target, "POST", f"/admin/v2/namespaces/{namespace}/replication",
                             [self.target.name])
        # Before deleting in the source: a replicator from the target would create it again.
        await self._wait(CLEAN_UP, lambda: self._replicating_back(namespaces))
        for topic in await self._topics(self.source, namespaces):
            await self._call(self.source, "DELETE",
                             f"/admin/v2/{topic.replace('://', '/')}?force=true")
        for namespace in namespaces:
            await self._call(self.source, "DELETE", f"/admin/v2/namespaces/{namespace}")
        await self._call(self.source, "DELETE", f"/admin/v2/tenants/{self.tenant}")

    async def _replicating_back(self, namespaces: list[str]) -> list[str]:
        return [f"{topic}: replication from {self.target.name} to {self.source.name} to stop"
                for topic in await self._topics(self.target, namespaces)
                if self.source.name in (await self._stats(self.target, topic))
                .get("replication", {})]


class MigrationRefused(Exception):
    """The migration cannot start; `status` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class Migrations:
    """The migrations this lookup-service process runs or ran, by tenant."""

    def __init__(self, directory: TenantDirectory, session: aiohttp.ClientSession,
                 mutants: Mutants = NONE) -> None:
        self._directory = directory
        self._session = session
        self._mutants = mutants
        self._by_tenant: dict[str, Migration] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, tenant: str, target: str, timeout_s: float) -> Migration:
        running = self._by_tenant.get(tenant)
        if running is not None and running.state == "running":
            raise MigrationRefused(409, f"tenant {tenant} is already moving to "
                                        f"{running.target.name}")
        directory = self._directory
        source_name = await asyncio.to_thread(directory.cluster_of, tenant)
        if source_name == target:
            raise MigrationRefused(409, f"tenant {tenant} is already in cluster {target}")
        source = await asyncio.to_thread(directory.cluster, source_name)
        destination = await asyncio.to_thread(directory.cluster, target)
        for cluster in (source, destination):
            if not cluster.admin_url:
                raise MigrationRefused(412, f"the lookup service has no serviceUrl (admin "
                                            f"API) for cluster {cluster.name}")
        migration = Migration(tenant, source, destination, directory, self._session,
                              timeout_s, self._mutants)
        self._by_tenant[tenant] = migration
        task = asyncio.create_task(migration.run(), name=f"migration-{tenant}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return migration

    def of(self, tenant: str) -> Migration | None:
        return self._by_tenant.get(tenant)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
