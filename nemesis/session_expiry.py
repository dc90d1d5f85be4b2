"""Expire a chosen client's ZooKeeper session, the way ZooKeeper's own tests do.

A second client connects with the victim's session id and password, which makes the server
move the session to the new connection (dropping the victim's), and then closes it, which
expires the session for good: ZooKeeper deletes the session's ephemeral nodes and fires
their watches at once, without waiting for a timeout.

The victim itself learns of the expiry only when it next talks to the server: its
connection was dropped, so it reconnects and is told the session is gone. A client cut off
from every server (a partition, a paused process) believes in its session until then; that
window, where the server has already handed ephemeral nodes to someone else, is what
session-expiry scenarios probe (PIP-57).

The session id and password come from wherever the victim publishes them (the broker's debug
endpoint); this module needs nothing from the system under test beyond ZooKeeper itself.
"""

from __future__ import annotations

from typing import Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from history.errors import EnvironmentProblem


class SessionExpiryFailed(EnvironmentProblem):
    """The ensemble could not be reached to expire the session."""


class HasZooKeeperSession(Protocol):
    """A client that exposes its session, e.g. `impl.metadata.store.MetadataStore`."""

    @property
    def hosts(self) -> str: ...

    @property
    def session_id(self) -> int | None: ...

    @property
    def session_password(self) -> bytes | None: ...


def expire_session(hosts: str, session_id: int, password: bytes, timeout: float = 15.0) -> bool:
    """Expire session `session_id` on the ensemble `hosts` (`host:port,...`, no chroot).

    Returns once the server has closed the session: True when this call closed it, False
    when it had already expired (then the attempt opened and closed a fresh session of its
    own, which harms nobody). Raises SessionExpiryFailed when no server answers in time.
    """
    ghost = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=timeout)
    try:
        ghost.start(timeout=timeout)
    except (KazooTimeoutError, KazooException) as exc:
        raise SessionExpiryFailed(
            f"could not reach ZooKeeper at {hosts} to expire session 0x{session_id:x}: {exc!r}"
        ) from exc
    try:
        # kazoo takes a new session of its own when the given one is already gone.
        took_over = ghost.client_id is not None and ghost.client_id[0] == session_id
    finally:
        # stop() sends closeSession and waits for the server's reply: the session is
        # closed on the server when it returns.
        ghost.stop()
        ghost.close()
    return took_over


def expire_session_of(client: HasZooKeeperSession | KazooClient, timeout: float = 15.0) -> bool:
    """Expire the current session of a local client (a metadata store or a KazooClient)."""
    if isinstance(client, KazooClient):
        if client.client_id is None:
            raise SessionExpiryFailed("the client has no session to expire")
        session_id, password = client.client_id
        hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
    else:
        if client.session_id is None or client.session_password is None:
            raise SessionExpiryFailed("the client has no session to expire")
        session_id, password, hosts = client.session_id, client.session_password, client.hosts
    return expire_session(hosts, session_id, password, timeout)
