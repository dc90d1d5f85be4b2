"""The credentials the harness presents to the target under test: none, or a token (a
superuser's on clusters starquake starts with `auth = "token"`, the target file's
`auth_token` on a third party's). One process tests one target, so they are held for the
process: every client and admin call presents them without each workload passing them
along. `unprivileged` is a token for a role granted nothing, where the harness can make
one (the auth probes use it to show that a known role is still refused)."""

from __future__ import annotations

from dataclasses import dataclass

import pulsar

from wire.tokens import bearer_header


@dataclass(frozen=True)
class Credentials:
    token: str
    unprivileged: str | None = None


_presented: Credentials | None = None


def present(credentials: Credentials | None) -> None:
    """From now on, present `credentials` (None: none)."""
    global _presented
    _presented = credentials


def presented() -> Credentials | None:
    return _presented


def client_authentication() -> pulsar.Authentication | None:
    """The official client's `authentication` option."""
    return None if _presented is None else pulsar.AuthenticationToken(_presented.token)


def client_token() -> str | None:
    """The token the harness's own protocol client (the scalable-topics client, which
    takes it as a parameter) presents in CONNECT."""
    return None if _presented is None else _presented.token


def admin_headers() -> dict[str, str]:
    """What an admin request adds: Pulsar's `Authorization: Bearer <token>`."""
    return {} if _presented is None else bearer_header(_presented.token)
