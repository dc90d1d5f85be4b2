"""The one place both edges (binary protocol, admin API) ask who a client is and whether
it may do something; each maps the refusals onto its own protocol."""

from __future__ import annotations

from impl.naming.topic_name import NamespaceName
from impl.security.authorization import Authorizer, PermissionSource
from impl.security.config import OPEN, SecurityConfig
from impl.security.errors import NotAuthenticated, NotAuthorized
from wire.tokens import TOKEN_METHOD, InvalidToken, read_secret_key, verify


class Guard:
    def __init__(self, config: SecurityConfig = OPEN,
                 permissions: PermissionSource | None = None) -> None:
        self.config = config
        self._secret = (read_secret_key(config.token_secret_key)
                        if config.authentication_enabled and config.token_secret_key else None)
        if config.authorization_enabled and permissions is None:
            raise ValueError("authorization needs a permission source")
        self.authorizer = (Authorizer(permissions, config.superuser_roles)
                           if config.authorization_enabled and permissions is not None
                           else None)

    def authenticate(self, method: str, credentials: str) -> str | None:
        """The role `credentials` prove; None (anonymous) while authentication is off."""
        if self._secret is None:
            return None
        if not method:
            raise NotAuthenticated(f"no credentials given; this broker takes a "
                                   f"{TOKEN_METHOD!r}")
        if method != TOKEN_METHOD:
            raise NotAuthenticated(f"authentication method {method!r} is not offered; use "
                                   f"{TOKEN_METHOD!r}")
        try:
            return verify(self._secret, credentials)
        except InvalidToken as exc:
            raise NotAuthenticated(f"invalid token: {exc}") from None

    def _role(self, role: str | None) -> tuple[Authorizer, str] | None:
        """Nothing to check (authorization off), or the authorizer and the known role."""
        if self.authorizer is None:
            return None
        if role is None:
            raise NotAuthenticated("this request needs credentials")
        return self.authorizer, role

    def check_namespace(self, role: str | None, namespace: NamespaceName,
                        actions: frozenset[str]) -> None:
        """`role` may do one of `actions` on the namespace's topics (blocking)."""
        if (checked := self._role(role)) is not None and not checked[0].may(
                checked[1], namespace, actions):
            raise NotAuthorized(f"role {checked[1]} may not {'/'.join(sorted(actions))} "
                                f"on {namespace}")

    def check_tenant_admin(self, role: str | None, tenant: str) -> None:
        if (checked := self._role(role)) is not None and not checked[0].is_tenant_admin(
                checked[1], tenant):
            raise NotAuthorized(f"role {checked[1]} is not an admin of tenant {tenant}")

    def check_superuser(self, role: str | None) -> None:
        if (checked := self._role(role)) is not None and not checked[0].is_superuser(
                checked[1]):
            raise NotAuthorized(f"role {checked[1]} is not a superuser")


OPEN_GUARD = Guard()
