"""One thread that runs a store's callbacks, one at a time, in the order they happened.

kazoo calls state listeners on its connection thread, where blocking (say, re-creating an
ephemeral node after a new session) would stall the very connection the call needs. Handing
every callback (session events and watches alike) to one queue keeps their order and lets
callbacks use the store freely. A callback must not wait for a later callback.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

_STOP = None


class Notifier:
    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the notifier thread after everything submitted before it."""
        self._queue.put(callback)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until everything submitted so far has run."""
        done = threading.Event()
        self.submit(done.set)
        done.wait(timeout)

    def in_notifier_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self, timeout: float = 5.0) -> None:
        """Run what is queued, then end the thread (at once when called from a callback)."""
        self._queue.put(_STOP)
        if not self.in_notifier_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while (callback := self._queue.get()) is not _STOP:
            try:
                callback()
            except Exception:
                # One broken listener must not silence the others.
                log.exception("metadata store callback failed")
