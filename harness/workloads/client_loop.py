"""An asyncio event loop in a thread of its own, for workloads whose client library is
asyncio (harness/scalable_client) while the run drives them from plain threads: producers call into
the loop and wait for the answer with a bound."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

STOP_TIMEOUT_S = 5.0


class ClientLoop:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `work` on the loop and wait for its result; on `TimeoutError` it is
        cancelled, so nothing it started goes on behind the caller's back."""
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        """Cancel what is still running on the loop, then end its thread."""
        if self._loop.is_closed():
            return

        async def cancel_the_rest() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.call(cancel_the_rest(), STOP_TIMEOUT_S)
        except TimeoutError:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
