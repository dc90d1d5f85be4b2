"""Storage errors below the contract of api.py: what a bookie or the metadata says went
wrong, each carrying the ledger or bookie it concerns. The managed ledger turns the ones
the front end must act on into api.py's errors (a fenced ledger becomes OwnershipLost)."""

from __future__ import annotations

from impl.storage.api import StorageError


class BookieError(StorageError):
    """A bookie refused a request or could not be asked."""

    def __init__(self, bookie: str, message: str) -> None:
        super().__init__(f"bookie {bookie}: {message}")
        self.bookie = bookie


class BookieUnavailable(BookieError):
    """No connection, the connection broke, or no answer in time: the request's outcome
    is unknown (an add may or may not be stored)."""


class NoBookieAvailable(StorageError):
    """No bookie is registered in ZooKeeper, so no ledger can be created."""

    def __init__(self) -> None:
        super().__init__("no bookie is registered under /ledgers/available")


class NoSuchLedger(BookieError):
    pass


class LedgerExists(BookieError):
    pass


class LedgerFenced(BookieError):
    """Another writer fenced the ledger: our adds to it can never succeed again."""


class LedgerClosed(BookieError):
    pass


class BadEntryId(BookieError):
    """An add out of sequence (a gap or a duplicate), or a close past the last entry."""


class NoSuchEntry(BookieError):
    pass


class MalformedRequest(BookieError):
    """The bookie could not parse our request: a bug on one side of the protocol."""


class BookieNotAuthorized(BookieError):
    """The bookie has authentication on and took no token of ours."""


class BookieInternalError(BookieError):
    pass


class ManagedLedgerClosed(StorageError):
    """The managed ledger was closed (unloaded) or deleted in this broker."""

    def __init__(self, name: str) -> None:
        super().__init__(f"managed ledger {name} is closed")
