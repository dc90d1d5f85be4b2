"""Why a request was refused for who sent it. Each edge maps these its own way: the
binary protocol to ServerError AuthenticationError / AuthorizationError, the admin API to
401 / 403, as Pulsar does."""

from __future__ import annotations


class NotAuthenticated(Exception):
    """No credentials, or credentials that prove no role."""


class NotAuthorized(Exception):
    """A known role that lacks the permission the request needs."""
