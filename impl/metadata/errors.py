"""The metadata store's errors, in the store's own words.

Callers never see kazoo's exceptions: each one is translated at the store's edge into one of
these, carrying the path it concerns, so that the managed ledger, the broker and the
controller can catch exactly the outcome they handle (a lost compare-and-set race, a node
someone else created) and let everything else travel up.
"""

from __future__ import annotations


class MetadataError(Exception):
    """Base of every metadata store error."""


class InvalidName(MetadataError, ValueError):
    """A name that cannot become a znode name (empty, for instance)."""

    def __init__(self, what: str, name: str, reason: str) -> None:
        super().__init__(f"invalid {what} name {name!r}: {reason}")
        self.what = what
        self.name = name


class NotFound(MetadataError):
    """The node (or, for a create without parents, its parent) does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no metadata node at {path}")
        self.path = path


class AlreadyExists(MetadataError):
    """A create lost to a node that is already there."""

    def __init__(self, path: str) -> None:
        super().__init__(f"metadata node already exists at {path}")
        self.path = path


class VersionConflict(MetadataError):
    """A compare-and-set saw another version than expected: someone wrote in between.

    Callers re-read and retry (see `MetadataStore.update`); the conflict is the store telling
    them their view was stale, not a failure of the store.
    """

    def __init__(self, path: str, expected_version: int) -> None:
        super().__init__(f"version conflict at {path}: expected version {expected_version}")
        self.path = path
        self.expected_version = expected_version


class NotEmpty(MetadataError):
    """A non-recursive delete of a node that still has children."""

    def __init__(self, path: str) -> None:
        super().__init__(f"metadata node {path} still has children")
        self.path = path


class Unavailable(MetadataError):
    """The operation's outcome is unknown: the connection dropped, the session expired or
    ZooKeeper did not answer in time. A write may or may not have been applied."""

    def __init__(self, operation: str, path: str, reason: str) -> None:
        super().__init__(f"metadata store unavailable during {operation} {path}: {reason}")
        self.operation = operation
        self.path = path
        self.reason = reason
