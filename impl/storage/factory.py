"""The storage entry point of a broker: one `ManagedLedgerFactory` per broker process.

    factory = ManagedLedgerFactory(store, mutants)
    ledger = await factory.open_ledger(TopicName.parse("persistent://public/default/t"))
    ...
    await factory.close()

The factory owns the bookie connections (one per bookie, shared by every ledger) and the
threads that run the synchronous metadata store off the event loop. It does not cache
ledgers: the broker's namespace service opens each topic once while it owns it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from impl.metadata.store import MetadataStore
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import TopicName
from impl.storage.api import ManagedLedger
from impl.storage.bookie_client import BookiePool
from impl.storage.context import ManagedLedgerConfig, StorageContext
from impl.storage.managed_ledger import ManagedLedgerImpl


class ManagedLedgerFactory:
    def __init__(self, store: MetadataStore, mutants: Mutants = NONE, *,
                 config: ManagedLedgerConfig = ManagedLedgerConfig(),
                 executor: ThreadPoolExecutor | None = None) -> None:
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(4, thread_name_prefix="storage-metadata")
        self._ctx = StorageContext(
            store, BookiePool(connect_timeout=config.bookie_connect_timeout,
                              request_timeout=config.bookie_request_timeout,
                              token=config.bookie_token),
            mutants, config, self._executor)

    async def open(self, name: str) -> ManagedLedger:
        """Open the managed ledger `name` as its new owner, creating it if needed: the
        previous owner's ledger is fenced (its later adds raise OwnershipLost). Raises
        OwnershipLost when another broker opened it at the same time, a `BookieError` or
        `NoBookieAvailable` when no bookie can serve, and the metadata store's
        `Unavailable` when ZooKeeper cannot."""
        return await ManagedLedgerImpl.open(name, self._ctx)

    async def open_ledger(self, topic: TopicName) -> ManagedLedger:
        """`open` under the topic's managed ledger name (the namespace service's
        `LedgerOpener`)."""
        return await self.open(managed_ledger_name(topic))

    async def close(self) -> None:
        """Close the bookie connections (close the ledgers first)."""
        await self._ctx.bookies.close()
        if self._own_executor:
            self._executor.shutdown(wait=False)


def managed_ledger_name(topic: TopicName) -> str:
    """Pulsar's managed ledger name of a topic: `tenant/namespace/persistent/local-name`."""
    return f"{topic.tenant}/{topic.namespace}/{topic.domain}/{topic.local_name}"
