"""The broker's security settings, as its flags give them (impl/broker/config.py): all off
by default, so a broker started by hand for exploring takes any client."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from wire.tokens import read_token


class InvalidSecurityConfig(ValueError):
    pass


@dataclass(frozen=True)
class SecurityConfig:
    authentication_enabled: bool = False
    """Pulsar's `authenticationEnabled`: CONNECT and admin requests must prove a role."""
    authorization_enabled: bool = False
    """Pulsar's `authorizationEnabled`: a role may do only what it was granted."""
    token_secret_key: str | None = None
    """The file holding the HS256 key tokens are signed with (`tokenSecretKey`)."""
    superuser_roles: frozenset[str] = frozenset()
    """Pulsar's `superUserRoles`."""
    debug_endpoints: bool = False
    """Serve `/admin/v2/debug/...` (our session debug endpoint, which hands out the
    ZooKeeper session password) at all; to superusers only when authorization is on."""
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    """Both given: the binary and admin ports speak TLS (`pulsar+ssl://`, `https://`)."""
    broker_client_token_file: str | None = None
    """The token this broker presents when it is itself the client: its replicators'
    CONNECT to other clusters, its admin requests to brokers of its own cluster (Pulsar's
    `brokerClientAuthenticationPlugin` = `AuthenticationToken` with
    `brokerClientAuthenticationParameters` = `file:///...`). Its role must be one of the
    other brokers' superusers; none: the broker presents nothing."""

    def __post_init__(self) -> None:
        if self.authentication_enabled and self.token_secret_key is None:
            raise InvalidSecurityConfig("authentication needs --token-secret-key")
        if self.authorization_enabled and not self.authentication_enabled:
            raise InvalidSecurityConfig("authorization needs authentication: without it "
                                        "no role is known")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise InvalidSecurityConfig("give both --tls-cert-file and --tls-key-file")

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None

    def broker_client_token(self) -> str | None:
        """The token in `broker_client_token_file`, None without one. The broker reads it
        at its start, so that a missing or empty file stops it there rather than at its
        first replicator, with a reason that names the flag."""
        path = self.broker_client_token_file
        if path is None:
            return None
        try:
            return read_token(path)
        except OSError as exc:
            raise InvalidSecurityConfig(f"--broker-client-token-file {path}: "
                                        f"{exc.strerror}") from None
        except ValueError as exc:
            raise InvalidSecurityConfig(f"--broker-client-token-file: {exc}") from None

    def server_ssl_context(self) -> ssl.SSLContext | None:
        """The listeners' TLS context, or None for plain TCP."""
        if self.tls_cert_file is None or self.tls_key_file is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context


def parse_roles(text: str) -> frozenset[str]:
    """`--superuser-roles a, b`: the roles, blanks around them and empty ones dropped."""
    return frozenset(role.strip() for role in text.split(",") if role.strip())


OPEN = SecurityConfig()
"""No authentication, no authorization, no TLS, no debug endpoints."""
