"""`python -m impl.broker`, the broker process: wiring and lifecycle (docs/broker.md,
"The broker process"). It sits above every other layer of the implementation, the admin
API included, because it assembles them all.

Start order (docs/broker.md): connect to ZooKeeper, make sure the cluster and
`public/default` exist, listen on the binary and admin ports, then register as live (a
registered broker must answer what lookups send it). SIGTERM or SIGINT: unregister, unload
every bundle (clients are told to look their topics up again), close, exit 0. PIP-57's
`shutdown` policy exits 1.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from impl.admin.app import build_admin_app
from impl.admin.context import AdminContext
from impl.broker.allocator import return_large_buffers_when_freed
from impl.broker.config import USAGE_EXIT_CODE, BrokerConfig, parse_args
from impl.broker.dedup_policy import MetadataDeduplication
from impl.broker.schemas.registry import SchemaRegistry
from impl.broker.schemas.zookeeper import ZooKeeperSchemas
from impl.broker.server import BinaryServer
from impl.broker.service import BrokerService
from impl.metadata.errors import MetadataError
from impl.metadata.store import MetadataStore, read_digest
from impl.naming.bundles import NamespaceBundle
from impl.naming.topic_name import DEFAULT_NAMESPACE, DEFAULT_TENANT, NamespaceName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry
from impl.ownership.namespace_service import NamespaceService
from impl.ownership.ownership_cache import OwnershipCache
from impl.ownership.session_policy import SessionPolicy
from impl.replication.service import BrokerReplication
from impl.resources import ClusterData, PulsarResources
from impl.scalable.segment_storage import SegmentStorage
from impl.scalable.service import ScalableTopicsConfig, ScalableTopicService
from impl.security.config import InvalidSecurityConfig
from impl.security.guard import Guard
from impl.storage.context import ManagedLedgerConfig
from impl.storage.factory import ManagedLedgerFactory

log = logging.getLogger("impl.broker")

PIP57_EXIT_CODE = 1
ENVIRONMENT_EXIT_CODE = 4
"""Could not start: ZooKeeper unreachable, a port taken (the project's "environment" code)."""


def stale_node_wait(session_timeout: float) -> float:
    """How long a node of our previous session may take to vanish: the session timeout
    plus a margin for the server to process the expiry (PIP-57)."""
    return session_timeout * 1.5 + 2.0


class BrokerProcess:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.me = BrokerInfo(config.broker_url, config.web_url)
        self._stop = asyncio.Event()
        self._exit_code = 0
        self._executor = ThreadPoolExecutor(8, thread_name_prefix="broker-blocking")

    def request_stop(self, exit_code: int, reason: str) -> None:
        if not self._stop.is_set():
            log.warning("stopping (exit %d): %s", exit_code, reason)
            self._exit_code = exit_code
            self._stop.set()

    async def run(self) -> int:
        config, loop = self.config, asyncio.get_running_loop()
        digest = (None if config.metadata_digest_file is None
                  else read_digest(config.metadata_digest_file))
        store = await loop.run_in_executor(self._executor, lambda: MetadataStore.connect(
            config.zk, session_timeout=config.session_timeout, digest=digest))
        try:
            return await self._serve(store)
        finally:
            store.close()
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _serve(self, store: MetadataStore) -> int:
        config, loop = self.config, asyncio.get_running_loop()
        client_token = config.security.broker_client_token()
        resources = PulsarResources(store)
        await loop.run_in_executor(self._executor, self._initialise_cluster, resources)
        stale_wait = stale_node_wait(config.session_timeout)
        registry = BrokerRegistry(store, self.me, stale_wait=stale_wait)
        ownership = OwnershipCache(
            store, self.me, stale_wait=stale_wait,
            check_owner=not config.mutants.on("reown-without-owner-check"))
        storage = ManagedLedgerFactory(store, config.mutants, executor=self._executor,
                                       config=ManagedLedgerConfig(bookie_token=client_token))
        namespaces = NamespaceService(resources, ownership, registry, storage.open_ledger,
                                      executor=self._executor)
        schemas = SchemaRegistry(ZooKeeperSchemas(resources), config.mutants)
        service = BrokerService(namespaces, name_prefix=f"{config.cluster}-{config.port}",
                                schemas=schemas,
                                replication=BrokerReplication(
                                    config.cluster, resources, config.replication,
                                    config.mutants, client_token),
                                mutants=config.mutants,
                                deduplication=MetadataDeduplication(
                                    resources, config.deduplication_enabled,
                                    config.deduplication_entries_interval))
        guard = Guard(config.security, resources)
        scalable = ScalableTopicService(store, registry, ScalableTopicsConfig(
            self.me.broker_url, self.me.web_url, grace_period=config.scalable_grace_period,
            admin_token=client_token, step_pause=config.controller_step_pause_ms / 1000),
            config.mutants)
        service.scalable = scalable

        policy = SessionPolicy(
            store, config.session_expired_policy, ownership, registry,
            session_timeout=config.session_timeout,
            reconnect_retries=config.session_reconnect_retries,
            # PIP-57: after the retries, shut down (off under the mutant, docs/mutants.md).
            give_up=not config.mutants.on("reconnect-retried-forever"),
            unload_bundle=lambda bundle: self._unload_from_thread(namespaces, bundle, loop),
            shutdown=lambda reason: loop.call_soon_threadsafe(
                self.request_stop, PIP57_EXIT_CODE, reason))

        registered = False

        def healthy() -> str | None:
            if not registered:
                return "starting: not registered as a live broker yet"
            if not store.connected:
                return "not connected to ZooKeeper"
            if policy.session_lost:
                return "ZooKeeper session lost; bundles not re-owned yet"
            return None

        server = BinaryServer(service, guard=guard, limits=config.limits)
        await server.start(config.bind_host, config.port)
        admin = web.AppRunner(build_admin_app(AdminContext(
            config.cluster, store, resources, namespaces, healthy=healthy,
            client_stats=service.client_stats, scalable=scalable,
            segments=SegmentStorage(store, namespaces), broker=service, schemas=schemas,
            broker_deduplication=config.deduplication_enabled,
            max_namespace_bundles=config.max_namespace_bundles,
            broker_client_token=client_token), guard), access_log=None)
        await admin.setup()
        await web.TCPSite(admin, config.bind_host, config.admin_port,
                          ssl_context=config.security.server_ssl_context()).start()
        await loop.run_in_executor(self._executor, registry.register)
        registered = True
        policy.start()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop, 0, signal.Signals(signum).name)
        log.info("broker serving: %s, admin %s, cluster %s, policy %s%s", self.me.broker_url,
                 self.me.web_url, config.cluster, config.session_expired_policy.value,
                 f", mutants {sorted(config.mutants.enabled)}" if config.mutants.enabled else "")

        await self._stop.wait()
        policy.stop()
        await loop.run_in_executor(self._executor, scalable.close)
        if self._exit_code == 0:
            await loop.run_in_executor(self._executor, registry.unregister)
            await namespaces.close()
        await service.close()
        await server.close()
        await admin.cleanup()
        await storage.close()
        log.info("broker stopped")
        return self._exit_code

    def _initialise_cluster(self, resources: PulsarResources) -> None:
        """As Pulsar's cluster initialisation: the cluster and `public/default` exist."""
        resources.ensure_cluster(self.config.cluster,
                                 ClusterData(self.me.web_url, self.me.broker_url))
        resources.ensure_namespace(NamespaceName(DEFAULT_TENANT, DEFAULT_NAMESPACE),
                                   self.config.cluster)

    @staticmethod
    def _unload_from_thread(namespaces: NamespaceService, bundle: NamespaceBundle,
                            loop: asyncio.AbstractEventLoop) -> None:
        """The session policy's worker thread unloads on the event loop and waits."""
        asyncio.run_coroutine_threadsafe(namespaces.unload_bundle(bundle), loop).result()


def main(argv: list[str] | None = None) -> None:
    config = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    # `kill -USR1 <pid>` writes every thread's stack to the log: how a hung broker is read.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return_large_buffers_when_freed()
    try:
        sys.exit(asyncio.run(BrokerProcess(config).run()))
    except (MetadataError, OSError) as exc:
        _exit_at_once(f"cannot start: {exc}", ENVIRONMENT_EXIT_CODE)
    except InvalidSecurityConfig as exc:  # a credentials file its flags name is unusable
        _exit_at_once(f"cannot start: {exc}", USAGE_EXIT_CODE)


def _exit_at_once(reason: str, code: int) -> None:
    """End a broker that could not start without waiting for its worker threads: one may
    still be waiting on the metadata store whose session ended under it (a registration
    waiting for an old session's node to go), and an interpreter exit would wait for it
    for ever. The process must go, as PIP-57 wants, so that what supervises it starts a
    fresh one."""
    log.error(reason)
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    main()
