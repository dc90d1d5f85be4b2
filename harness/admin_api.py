"""Calls to an admin REST API (a broker's, or the lookup service's), as an operator's
script makes them: JSON in, JSON out, an error carrying the status and the server's
reason."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from harness.credentials import admin_headers

TIMEOUT = 15.0


class AdminError(Exception):
    """The API refused a request; `status` is the HTTP status."""

    def __init__(self, method: str, url: str, status: int, reason: str,
                 location: str | None = None) -> None:
        super().__init__(f"{method} {url}: {status} {reason}")
        self.status = status
        self.location = location
        """Where a redirect (a change is not followed by `admin_request`) points."""


REASON_CHARS = 300
"""The most of a plain-text error body an error carries: it ends up in one-line reasons."""


def server_reason(body: str, phrase: str) -> str:
    """What the server said was wrong, for one line: the `reason` of Pulsar's JSON error;
    else, for a web server's own HTML error page (Jetty's 404 for a path no resource
    serves), the status phrase; else the body's first line, shortened."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "reason" in answer:
        return str(answer["reason"])
    text = body.strip()
    if not text or text.startswith("<"):
        return phrase
    first = text.splitlines()[0]
    return first if len(first) <= REASON_CHARS else first[:REASON_CHARS] + "..."


def admin_request(base_url: str, method: str, path: str, body: Any = None,
                  timeout: float = TIMEOUT, authenticated: bool = True) -> Any:
    """The parsed JSON answer (None for an empty one); redirects are followed. The
    harness's credentials go along unless `authenticated` is false."""
    url = f"{base_url.rstrip('/')}{path}"
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json",
               **(admin_headers() if authenticated else {})}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        reason = server_reason(exc.read().decode(errors="replace"), str(exc.reason))
        raise AdminError(method, url, exc.code, reason, exc.headers.get("Location")) from None
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode()
