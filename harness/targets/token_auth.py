"""Token authentication on the clusters starquake starts (a scenario's
`[topology] auth = "token"`): a fresh secret key per run, brokers that require tokens
signed with it and grant a superuser role everything, and the harness presenting that
role's token (harness/credentials.py) to its workloads, admin driver and nemesis."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from harness.credentials import Credentials
from harness.topology import Topology
from wire.tokens import mint

SUPERUSER_ROLE = "starquake"
UNPRIVILEGED_ROLE = "starquake-unprivileged"
"""Granted nothing: what the auth probes show a known role is still refused."""
SECRET_KEY_FILE = "token-secret.key"


@dataclass(frozen=True)
class TokenAuth:
    secret: str
    """The key, as the text its file holds (brokers sign with the file's bytes)."""

    def credentials(self) -> Credentials:
        key = self.secret.encode()
        return Credentials(mint(key, SUPERUSER_ROLE), mint(key, UNPRIVILEGED_ROLE))

    def broker_args(self, key_path: str) -> tuple[str, ...]:
        """The broker flags, given where its node finds the key file."""
        return ("--authentication-enabled", "--authorization-enabled",
                "--token-secret-key", key_path, "--superuser-roles", SUPERUSER_ROLE)


def token_auth(topology: Topology) -> TokenAuth | None:
    """The run's token authentication, or None when the topology has none."""
    return TokenAuth(secrets.token_hex(32)) if topology.auth == "token" else None
