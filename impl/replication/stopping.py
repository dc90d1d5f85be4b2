"""Ending asyncio tasks for sure, so that closing a topic (and so unloading a bundle) takes
bounded time.

Python 3.11's `asyncio.wait_for` returns the answer instead of raising when a cancel
arrives in the same loop turn as that answer: the cancel is lost, and a `while True` loop
(a replicator, the snapshot timer, a subscription's dispatcher) runs on, so whoever awaits
its end after one `cancel()` waits forever. Our connections now await with
`asyncio.timeout`, which keeps the cancel, but a loop may await any library's code; so a
close cancels again while the task still runs, which ends it at its next wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

RECANCEL_S = 0.5
"""How long a cancelled task (or a close) may take before it is cancelled again."""


async def stop_task(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and return once it has ended (its outcome is dropped)."""
    task.cancel()
    await _until_done(task)
    if not task.cancelled():
        task.exception()  # retrieved: a loop that failed while stopping has nothing to say


async def finish(work: Awaitable[Any]) -> None:
    """Await `work` (a close that cancels loops and awaits them); when it outlasts
    `RECANCEL_S`, cancel it, which cancels again the loop it awaits, until it ends.
    Raises what the close raised."""
    task = asyncio.ensure_future(work)
    await _until_done(task)
    if not task.cancelled():
        task.result()


async def _until_done(task: asyncio.Future[Any]) -> None:
    while not task.done():
        await asyncio.wait({task}, timeout=RECANCEL_S)
        if not task.done():
            task.cancel()
