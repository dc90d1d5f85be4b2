"""Reading a ZooKeeper by hand, behind `starquake zk ls` and `starquake zk get`: a run's
cluster metadata, the lookup service's records.

In a run with `auth = "token"` every node the brokers, bookies and lookup service create
carries a digest ACL for the run's `user:password` (docs/security.md), so a reader must
present the same credentials: ZooKeeper answers anyone else with NoAuth, which this module
turns into a refusal that says so rather than an empty or missing node."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from history.errors import BadInput, EnvironmentProblem

CONNECT_TIMEOUT_S = 10.0
DIGEST_FLAG = "--digest-file"
"""The command line's flag for the credentials, named in the refusal."""
Read = TypeVar("Read")
_KAZOO_LOG = logging.getLogger(f"{__name__}.kazoo")
"""kazoo's own log of each failed connection attempt: the refusal or the time-out this
module raises says what a user needs, once."""
_KAZOO_LOG.addHandler(logging.NullHandler())
_KAZOO_LOG.propagate = False


class NotAdmitted(BadInput):
    """ZooKeeper refused a read: the node's ACL does not admit the credentials given."""


def read_digest_file(path: Path) -> str:
    """`user:password`, the one line of the file (the form the nodes'
    `--metadata-digest-file` takes)."""
    try:
        digest = path.read_text().strip()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the digest file: {exc.strerror}") from None
    if ":" not in digest:
        raise BadInput(f"{path}: expected one line user:password")
    return digest


@contextmanager
def _session(connect_string: str, digest: str | None) -> Iterator[KazooClient]:
    client = KazooClient(hosts=connect_string, logger=_KAZOO_LOG,
                         auth_data=[("digest", digest)] if digest is not None else None)
    try:
        try:
            with warnings.catch_warnings():  # a missing chroot: reads say "no node"
                warnings.simplefilter("ignore", UserWarning)
                client.start(timeout=CONNECT_TIMEOUT_S)
        except KazooTimeoutError:
            raise EnvironmentProblem(f"no ZooKeeper server of {connect_string} answered "
                                     f"within {CONNECT_TIMEOUT_S:.0f} s") from None
        yield client
    finally:
        client.stop()
        client.close()


def _read(connect_string: str, path: str, digest: str | None,
          read: Callable[[KazooClient, str], Read]) -> Read:
    try:
        with _session(connect_string, digest) as client:
            return read(client, path)
    except NoAuthError:
        given = ("the credentials given" if digest is not None
                 else f"a client without credentials (give them with {DIGEST_FLAG} FILE)")
        raise NotAdmitted(f"ZooKeeper refused to read {path} in {connect_string}: its ACL "
                          f"does not admit {given}") from None
    except NoNodeError:
        raise BadInput(f"no node {path} in {connect_string}") from None
    except KazooException as exc:
        raise EnvironmentProblem(f"reading {path} in {connect_string} failed: "
                                 f"{exc!r}") from None


def children(connect_string: str, path: str, digest: str | None = None) -> list[str]:
    """The node's children, sorted."""
    return sorted(_read(connect_string, path, digest,
                        lambda client, node: list(client.get_children(node))))


def data(connect_string: str, path: str, digest: str | None = None) -> bytes:
    """The node's data."""
    return _read(connect_string, path, digest, lambda client, node: bytes(client.get(node)[0]))
