"""Pulsar's token authentication: a JWT signed with a shared secret key (HS256) whose
subject is the client's role, carried in CONNECT's `auth_data` and in admin requests'
`Authorization: Bearer` header. Here, in the protocol package, because both sides use it:
brokers verify tokens, the harness mints them for the clusters it starts. Standard library
only, so nobody needs a JWT package; `exp`, when present, is honoured.

Only HS256 is accepted: a token that names another algorithm (`none` above all) is refused
rather than trusted, the classic JWT mistake.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any

ALGORITHM = "HS256"
TOKEN_METHOD = "token"
"""CONNECT's `auth_method_name` for Pulsar's token authentication."""
BEARER = "Bearer "
"""What precedes the token in an admin request's `Authorization` header."""


def bearer_header(token: str) -> dict[str, str]:
    """The header an admin request carries the token in."""
    return {"Authorization": f"{BEARER}{token}"}


class InvalidToken(Exception):
    """A token that does not prove a role: malformed, badly signed, expired."""


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken(f"not base64url: {exc}") from None


def _signature(secret: bytes, signed_part: str) -> bytes:
    return hmac.new(secret, signed_part.encode(), hashlib.sha256).digest()


def mint(secret: bytes, subject: str, expires_at: int | None = None) -> str:
    """A token for role `subject`, valid until `expires_at` (Unix seconds) or for ever, as
    `pulsar tokens create --secret-key ... --subject ...` makes."""
    claims: dict[str, Any] = {"sub": subject}
    if expires_at is not None:
        claims["exp"] = expires_at
    header = _encode(json.dumps({"alg": ALGORITHM, "typ": "JWT"}).encode())
    payload = _encode(json.dumps(claims).encode())
    signed_part = f"{header}.{payload}"
    return f"{signed_part}.{_encode(_signature(secret, signed_part))}"


def _json_object(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_decode(part))
    except ValueError as exc:
        raise InvalidToken(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"{what} is not a JSON object")
    return value


def verify(secret: bytes, token: str, now: float | None = None) -> str:
    """The role `token` proves, or InvalidToken saying why it proves none."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise InvalidToken("a token has three dot-separated parts")
    header = _json_object(parts[0], "header")
    if header.get("alg") != ALGORITHM:
        raise InvalidToken(f"algorithm {header.get('alg')!r} is not accepted (only "
                           f"{ALGORITHM})")
    if not hmac.compare_digest(_signature(secret, f"{parts[0]}.{parts[1]}"),
                               _decode(parts[2])):
        raise InvalidToken("signature does not match")
    claims = _json_object(parts[1], "payload")
    expires_at = claims.get("exp")
    if expires_at is not None:
        if not isinstance(expires_at, int | float) or isinstance(expires_at, bool):
            raise InvalidToken("exp is not a number")
        if (time.time() if now is None else now) >= expires_at:
            raise InvalidToken("token has expired")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("token has no subject (role)")
    return subject


def read_secret_key(path: str) -> bytes:
    """A secret key file as Pulsar's `tokenSecretKey=file:///...` names it: the raw key
    bytes (`pulsar tokens create-secret-key` writes them so)."""
    with open(path, "rb") as file:
        key = file.read()
    if not key:
        raise ValueError(f"secret key file {path} is empty")
    return key


def read_token(path: str) -> str:
    """A token file as Pulsar's `file:///...` token parameters name it: the token's text,
    surrounding whitespace (a trailing newline) left out."""
    with open(path, encoding="utf-8") as file:
        token = file.read().strip()
    if not token:
        raise ValueError(f"token file {path} is empty")
    return token
