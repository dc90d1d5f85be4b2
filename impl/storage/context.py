"""What every managed ledger of one broker shares: the metadata store, the bookie
connections, the mutants, the configuration, and how ledgers are created."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TypeVar

from impl.metadata import ids, paths
from impl.metadata.store import MetadataStore
from impl.mutants import Mutants
from impl.storage.bookie_client import BookiePool
from impl.storage.errors import NoBookieAvailable
from impl.storage.ledger_info import LedgerInfo

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class ManagedLedgerConfig:
    max_entries_per_ledger: int = 50_000
    """Roll over to a new ledger after this many entries, so no ledger grows forever."""
    bookie_connect_timeout: float = 5.0
    bookie_request_timeout: float = 15.0
    """An add unanswered this long fails with BookieUnavailable (outcome unknown)."""
    bookie_token: str | None = None
    """What the broker presents to bookies with authentication on (its client token)."""


@dataclass
class StorageContext:
    store: MetadataStore
    bookies: BookiePool
    mutants: Mutants
    config: ManagedLedgerConfig
    executor: Executor

    async def blocking(self, fn: Callable[..., T], *args: object) -> T:
        """Run a synchronous metadata call off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def create_ledger(self) -> LedgerInfo:
        """A new, empty ledger on a live bookie, with a cluster-wide unique id. Bookies are
        chosen round-robin by ledger id among the registered ones, which spreads ledgers
        evenly and deterministically."""
        registered = await self.blocking(self._live_bookies)
        if not registered:
            raise NoBookieAvailable()
        ledger_id = await self.blocking(ids.allocate_id, self.store, paths.LEDGER_ID_PREFIX)
        bookie = registered[ledger_id % len(registered)]
        await self.bookies.client(bookie).create(ledger_id)
        log.info("created ledger %d on bookie %s", ledger_id, bookie)
        return LedgerInfo(ledger_id, (bookie,))

    def _live_bookies(self) -> list[str]:
        if not self.store.exists(paths.BOOKIES_AVAILABLE):
            return []
        return [paths.decode(name) for name in self.store.children(paths.BOOKIES_AVAILABLE)]
