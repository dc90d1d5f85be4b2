"""The metadata store: the implementation's one door to ZooKeeper.

Everything in `impl` that reads or writes metadata goes through `MetadataStore`, so the
rules that matter for correctness live here once: writes are compare-and-set on the node
version, every operation has a deadline (a dead ensemble yields `Unavailable`, never a hung
broker), reads ride out a connection loss within that deadline while writes report it (their
outcome is unknown), and session changes arrive as `SessionEvent`s that tell a reconnect
within the same session from a brand-new session (PIP-57).
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.security import make_digest_acl

from impl.metadata.errors import (
    AlreadyExists,
    MetadataError,
    NotEmpty,
    NotFound,
    Unavailable,
    VersionConflict,
)
from impl.metadata.notifier import Notifier
from impl.metadata.session import SessionEvent, SessionTracker

log = logging.getLogger(__name__)

_UNAVAILABLE = (
    ConnectionLoss,
    ConnectionClosedError,
    SessionExpiredError,
    OperationTimeoutError,
    KazooTimeoutError,
)

# Reconnect quickly: kazoo's default backoff grows to 60 s between attempts, far longer
# than the session timeouts we run with, so a client would let its session expire while
# it sleeps. ZooKeeper's own Java client waits at most about a second.
_CONNECTION_RETRY = {"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0}


class Versioned(NamedTuple):
    """A node's data and the version a compare-and-set must name to replace it."""

    data: bytes
    version: int


@dataclass(frozen=True)
class Node:
    """A node as read or watched, with what ownership checks need."""

    data: bytes
    version: int
    ephemeral_owner: int
    """The session id that owns this ephemeral node; 0 for a persistent node."""
    created_zxid: int
    """Tells a re-created node from the old one even when data and version match."""

    @classmethod
    def _from_stat(cls, data: bytes, stat: ZnodeStat) -> Node:
        return cls(data, stat.version, stat.ephemeralOwner, stat.czxid)


class Watch:
    """A registered callback; `cancel()` guarantees no later call starts."""

    def __init__(self, on_cancel: Callable[[], None] | None = None) -> None:
        self._cancelled = threading.Event()
        self._on_cancel = on_cancel

    @property
    def active(self) -> bool:
        return not self._cancelled.is_set()

    def cancel(self) -> None:
        if self._cancelled.is_set():
            return
        self._cancelled.set()
        if self._on_cancel is not None:
            self._on_cancel()

    def _call_if_active(self, callback: Callable[..., None], *args: Any) -> None:
        if self.active:
            callback(*args)


class MetadataStore:
    """One ZooKeeper session, with the operations, watches and session events the
    implementation needs. Create it with `MetadataStore.connect`.

    Callbacks (watches, session events) run on one notifier thread per store, in order;
    they may call the store.
    """

    def __init__(self, connect_string: str, *, session_timeout: float, operation_timeout: float,
                 digest: str | None = None):
        hosts, slash, chroot = connect_string.partition("/")
        self._hosts = hosts
        self._chroot = posixpath.normpath("/" + chroot) if slash else ""
        self._operation_timeout = operation_timeout
        self._client = KazooClient(
            hosts=connect_string,
            timeout=session_timeout,
            connection_retry=dict(_CONNECTION_RETRY),
            **digest_options(digest),
        )
        self._tracker = SessionTracker()
        self._notifier = Notifier(f"metadata-notifier-{hosts}{self._chroot}")
        self._session_watches: list[tuple[Watch, Callable[[SessionEvent], None]]] = []
        self._lock = threading.Lock()
        self._first_session = threading.Event()
        self._closing = False

    @classmethod
    def connect(
        cls,
        connect_string: str,
        *,
        session_timeout: float = 10.0,
        operation_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        create_chroot: bool = True,
        session_listener: Callable[[SessionEvent], None] | None = None,
        digest: str | None = None,
    ) -> MetadataStore:
        """A connected store. `connect_string` is ZooKeeper's `host:port,host:port[/chroot]`;
        every path is then relative to the chroot, which is created first when missing.
        `session_listener` hears every session event from the first CONNECTED on;
        listeners added later with `watch_session` hear the events after it.

        With `digest` (`user:password`) the session authenticates with ZooKeeper's digest
        scheme and every node it creates is readable and writable by that user only.

        Raises `Unavailable` when no server accepts a session within `connect_timeout`.
        """
        store = cls(
            connect_string, session_timeout=session_timeout, operation_timeout=operation_timeout,
            digest=digest,
        )
        if session_listener is not None:
            store.watch_session(session_listener)
        try:
            if store._chroot and create_chroot:
                _ensure_chroot(store._hosts, store._chroot, connect_timeout, digest)
            store._client.add_listener(store._on_kazoo_state)
            with store._translating("connect", store._chroot or "/"):
                store._client.start(timeout=connect_timeout)
            # kazoo may return from start() just before it tells listeners; wait for the
            # CONNECTED event to be delivered so that it never reaches a later listener.
            store._first_session.wait(connect_timeout)
            store._notifier.flush(connect_timeout)
        except BaseException:
            store.close()
            raise
        return store

    # --- session ---------------------------------------------------------------------

    @property
    def hosts(self) -> str:
        """The ensemble's `host:port,...` without the chroot (what another client of the
        same session, such as the expiry nemesis, must connect to)."""
        return self._hosts

    @property
    def chroot(self) -> str:
        return self._chroot

    @property
    def session_id(self) -> int | None:
        """The current session's id, None between a LOST and the next session."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    @property
    def session_password(self) -> bytes | None:
        client_id = self._client.client_id
        return client_id[1] if client_id else None

    @property
    def connected(self) -> bool:
        return bool(self._client.connected)

    def watch_session(self, callback: Callable[[SessionEvent], None]) -> Watch:
        """Call `callback(event)` for every later `SessionEvent`."""
        entry: tuple[Watch, Callable[[SessionEvent], None]]

        def forget() -> None:
            with self._lock:
                self._session_watches.remove(entry)

        watch = Watch(on_cancel=forget)
        entry = (watch, callback)
        with self._lock:
            self._session_watches.append(entry)
        return watch

    def _on_kazoo_state(self, state: KazooState) -> None:
        # kazoo's connection thread: classify now (the session id is current here), run
        # the listeners later on the notifier thread.
        if self._closing:
            return
        event = self._tracker.on_state(state, self.session_id)
        log.info("metadata session %s (session 0x%x)", event.value, self.session_id or 0)
        self._notifier.submit(lambda: self._deliver_session_event(event))
        self._first_session.set()

    def _deliver_session_event(self, event: SessionEvent) -> None:
        with self._lock:
            entries = list(self._session_watches)
        for watch, callback in entries:
            watch._call_if_active(callback, event)

    # --- reads -------------------------------------------------------------------------

    def get(self, path: str) -> Versioned:
        """The node's data and version; `NotFound` when there is no node."""
        node = self.get_node(path)
        return Versioned(node.data, node.version)

    def get_node(self, path: str) -> Node:
        """The node with its ownership facts, read in one request."""
        data, stat = self._read("get", path, self._client.get_async)
        return Node._from_stat(data, stat)

    def exists(self, path: str) -> bool:
        return self._read("exists", path, self._client.exists_async) is not None

    def ephemeral_owner(self, path: str) -> int:
        """The session id owning the ephemeral node at `path` (0 if persistent). PIP-57:
        compare with `session_id` before trusting a node that "looks like ours"."""
        stat = self._read("exists", path, self._client.exists_async)
        if stat is None:
            raise NotFound(path)
        return int(stat.ephemeralOwner)

    def children(self, path: str) -> list[str]:
        """Child names, sorted. Names are as stored: `paths.decode` turns them back."""
        return sorted(self._read("children", path, self._client.get_children_async))

    # --- writes ------------------------------------------------------------------------

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = True,
    ) -> str:
        """Create the node and return its path (with the sequence suffix when sequential).
        Missing parents are created persistent. `AlreadyExists` if it is there."""
        with self._translating("create", path):
            created = self._wait(
                self._client.create_async(
                    path, data, ephemeral=ephemeral, sequence=sequential, makepath=make_parents
                )
            )
        return str(created)

    def set(self, path: str, data: bytes, expected_version: int) -> int:
        """Compare-and-set: replace the data only if the node is still at
        `expected_version` (-1: any version). Returns the new version; raises
        `VersionConflict` when someone wrote in between."""
        with self._translating("set", path, expected_version):
            stat = self._wait(self._client.set_async(path, data, expected_version))
        return int(stat.version)

    def update(
        self, path: str, transform: Callable[[bytes], bytes], *, retries: int = 10
    ) -> Versioned:
        """Read-modify-write: apply `transform` to the current data and compare-and-set the
        result, re-reading and re-applying on each `VersionConflict`. `transform` may run
        several times, so it must not have side effects. Gives up with the last
        `VersionConflict` after `retries` extra attempts."""
        conflicts = 0
        while True:
            current = self.get(path)
            new_data = transform(current.data)
            try:
                return Versioned(new_data, self.set(path, new_data, current.version))
            except VersionConflict:
                conflicts += 1
                if conflicts > retries:
                    raise

    def delete(self, path: str, expected_version: int = -1, *, recursive: bool = False) -> None:
        """Delete the node if it is at `expected_version` (-1: any). `recursive` deletes
        the subtree first, children unconditionally; it cannot be combined with a version."""
        if recursive:
            if expected_version != -1:
                raise ValueError("a recursive delete cannot check a version")
            for child in self.children(path):
                try:
                    self.delete(posixpath.join(path, child), recursive=True)
                except NotFound:
                    pass  # an ephemeral child went away on its own
        with self._translating("delete", path, expected_version):
            self._wait(self._client.delete_async(path, expected_version))

    # --- watches -----------------------------------------------------------------------

    def watch_data(self, path: str, callback: Callable[[Node | None], None]) -> Watch:
        """Call `callback(node)` soon with the node and after every change of it; `None` while there
        is no node. Survives reconnects and new sessions. Consecutive updates may be seen
        as one (a ZooKeeper watch fires once, then is set again by the next read), but a
        deletion is always reported, even when the node was re-created before the re-read:
        an election watcher must see the gap between two leaders."""
        watch = Watch()
        last_created_zxid: int | None = None

        # Three parameters: kazoo calls with (data, stat, event) and retries with two on
        # any TypeError, which would hide a TypeError raised inside. kazoo runs one call
        # at a time per watch, so `last_created_zxid` needs no lock.
        def on_change(data: bytes | None, stat: ZnodeStat | None, _event: object) -> bool | None:
            nonlocal last_created_zxid
            if not watch.active:
                return False  # tells kazoo's DataWatch to stop
            node = None if stat is None else Node._from_stat(data or b"", stat)
            created = None if node is None else node.created_zxid
            if None not in (last_created_zxid, created) and created != last_created_zxid:
                # Another creation than last time: it was deleted in between.
                self._notifier.submit(partial(watch._call_if_active, callback, None))
            last_created_zxid = created
            self._notifier.submit(partial(watch._call_if_active, callback, node))
            return None

        # kazoo's recipes read (and retry) in the calling thread until they succeed; a
        # thread of their own keeps registration from hanging while ZooKeeper is away.
        self._client.handler.spawn(DataWatch, self._client, path, on_change)
        return watch

    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> Watch:
        """Call `callback(sorted children)` soon and after every change of the child list.
        The node must exist (`NotFound` otherwise); the watch ends when it is deleted."""
        # kazoo's ChildrenWatch silently gives up on a missing node, so check first.
        if not self.exists(path):
            raise NotFound(path)
        watch = Watch()

        def on_change(children: list[str]) -> bool | None:
            if not watch.active:
                return False
            ordered = sorted(children)
            self._notifier.submit(partial(watch._call_if_active, callback, ordered))
            return None

        self._client.handler.spawn(ChildrenWatch, self._client, path, on_change)
        return watch

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """End the session (its ephemeral nodes go with it) and stop every callback."""
        if self._closing:
            return
        self._closing = True
        self._client.remove_listener(self._on_kazoo_state)
        try:
            self._client.stop()
            self._client.close()
        finally:
            self._notifier.stop()

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------

    def _wait(self, async_result: Any) -> Any:
        return async_result.get(timeout=self._operation_timeout)

    def _read(self, operation: str, path: str, request: Callable[[str], Any]) -> Any:
        # Reads are repeated after a connection loss until the operation deadline: asking
        # again changes nothing. Writes never are: their first attempt may have landed.
        deadline = time.monotonic() + self._operation_timeout
        with self._translating(operation, path):
            while True:
                try:
                    return request(path).get(timeout=max(0.0, deadline - time.monotonic()))
                except ConnectionLoss:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)

    @contextmanager
    def _translating(self, operation: str, path: str, expected_version: int = -1) -> Iterator[None]:
        try:
            yield
        except NoNodeError:
            raise NotFound(path) from None
        except NodeExistsError:
            raise AlreadyExists(path) from None
        except BadVersionError:
            raise VersionConflict(path, expected_version) from None
        except NotEmptyError:
            raise NotEmpty(path) from None
        except _UNAVAILABLE as exc:
            raise Unavailable(operation, path, type(exc).__name__) from exc
        except KazooException as exc:
            raise MetadataError(f"{operation} {path} failed: {exc!r}") from exc


def digest_options(digest: str | None) -> dict[str, Any]:
    """KazooClient's options for a session as `user:password` (digest scheme), whose
    nodes only that user may read or change; none without one (`world:anyone`)."""
    if digest is None:
        return {}
    user, _, password = digest.partition(":")
    return {"auth_data": [("digest", digest)],
            "default_acl": [make_digest_acl(user, password, all=True)]}


def read_digest(path: str) -> str:
    """A digest credentials file: one line `user:password`."""
    with open(path) as file:
        digest = file.read().strip()
    if ":" not in digest:
        raise ValueError(f"{path}: expected user:password")
    return digest


def _ensure_chroot(hosts: str, chroot: str, connect_timeout: float,
                   digest: str | None = None) -> None:
    # kazoo cannot create its own chroot, so a short-lived client outside it does.
    client = KazooClient(hosts=hosts, connection_retry=dict(_CONNECTION_RETRY),
                         **digest_options(digest))
    try:
        try:
            client.start(timeout=connect_timeout)
            client.ensure_path_async(chroot).get(timeout=connect_timeout)
        except (KazooException, KazooTimeoutError) as exc:
            raise Unavailable("create chroot", chroot, type(exc).__name__) from exc
    finally:
        client.stop()
        client.close()
