"""An HTTP session for the admin API of one cluster's brokers that keeps the bearer token
across redirects.

The admin API answers many requests with a 307 to the broker that must serve them (the
owner of a segment's bundle, the leader of a scalable topic's controller), and that broker
asks for the same token. `requests` drops the `Authorization` header whenever a redirect
leaves the host and port the request was sent to, which on one machine is every other
broker, so a redirected request would arrive without credentials and be answered 401.
The redirects come from the cluster the token was made for, so this session keeps the
header. Both sides use it: a broker's controller calling the Segments API, and the
harness's scalable-topics admin driver."""

from __future__ import annotations

import requests

from wire.tokens import bearer_header


class ClusterAdminSession(requests.Session):
    def __init__(self, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.headers.update(headers or {})

    @classmethod
    def with_token(cls, token: str | None) -> ClusterAdminSession:
        """A session presenting `token` (None: no credentials)."""
        return cls(None if token is None else bearer_header(token))

    def should_strip_auth(self, old_url: str, new_url: str) -> bool:
        return False
