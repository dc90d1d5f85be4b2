"""What a client connection (`wire.connection`) raises."""

from __future__ import annotations

from wire.pulsar_api_pb2 import ServerError


class ClientError(Exception):
    """Base of the client side's errors."""


class ConnectionClosed(ClientError):
    """The connection to a broker closed; what was in flight has an unknown outcome."""


class BrokerError(ClientError):
    """A broker refused a request; `code` is the protocol's `ServerError`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"broker error {_name(code)}: {message}")
        self.code = code


def _name(code: int) -> str:
    """`ServerError`'s name for `code` (what a log reader looks for), else the number."""
    try:
        return ServerError.Name(ServerError.ValueType(code))
    except ValueError:
        return str(code)
class NotPermitted(BrokerError):
    """The broker refused the client's credentials (AuthenticationError) or its role's
    permission (AuthorizationError). Asking again with the same token cannot succeed, so a
    client gives up at once instead of retrying until its timeout."""


_REFUSALS = frozenset({ServerError.AuthenticationError, ServerError.AuthorizationError})


def broker_error(code: int, message: str) -> BrokerError:
    """The error for a broker's answer carrying `code`: `NotPermitted` for a refusal of
    who the client is, `BrokerError` for anything else."""
    return (NotPermitted if code in _REFUSALS else BrokerError)(code, message)
