"""Helpers shared by the storage tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from impl.storage.api import ManagedLedger
from impl.storage.factory import ManagedLedgerFactory

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one test's asyncio body with a bound, so a hang fails instead of stalling."""
    return asyncio.run(asyncio.wait_for(coroutine, 60))


@asynccontextmanager
async def owner(make_factory: Callable[..., ManagedLedgerFactory], name: str,
                **options: Any) -> AsyncIterator[ManagedLedger]:
    """The managed ledger `name` opened by a broker of its own (a factory with its own
    ZooKeeper session), closed afterwards."""
    factory = make_factory(**options)
    try:
        ledger = await factory.open(name)
        try:
            yield ledger
        finally:
            await ledger.close()
    finally:
        await factory.close()
