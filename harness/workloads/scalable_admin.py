"""The Scalable Topics admin REST API (`/admin/v2/scalable`, docs/scalable-topics.md) as the
`scalable` workload calls it: any broker answers, a mutation that lands on a broker that
does not lead is redirected to the leader (`requests` follows a 307 with its method and
body, and the harness's bearer token with them), and a broker that does not answer is
skipped for the next one. The merge probe (harness/workloads/merge_probe.py) also makes
one segment's cursor through the Segments admin API (`/admin/v2/segments`), the same way."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import requests
from urllib3.exceptions import NewConnectionError

from harness.credentials import admin_headers
from wire.admin_session import ClusterAdminSession
from wire.topic_names import ScalableTopicName, segment_admin_path

log = logging.getLogger(__name__)

TIMEOUT = 15.0
"""Per request; covers the leader's own wait of up to 10 s for a controller to lead."""


class AdminRefused(Exception):
    """A broker answered the request with an error status: it was not applied."""

    def __init__(self, what: str, status: int, reason: str) -> None:
        super().__init__(f"{what}: {status} {reason}")
        self.status = status
        self.reason = reason


class AdminUnreachable(Exception):
    """No broker gave an answer (or one answered 5xx): the request may have been applied."""


class ScalableTopicAdmin:
    def __init__(self, admin_urls: Sequence[str], topic: str) -> None:
        name = ScalableTopicName.parse(topic)
        self.paths = f"/admin/v2/scalable/{name.tenant}/{name.namespace}/{name.local_name}"
        self._urls = list(admin_urls)
        self._order = threading.Lock()
        """Guards `_urls`: the layout driver and the observer ask from their own threads."""
        self._http = ClusterAdminSession(admin_headers())

    def create(self, segments: int) -> dict[str, Any]:
        return self._object("PUT", "", {"numInitialSegments": segments})

    def metadata(self) -> dict[str, Any]:
        """PIP-468's `ScalableTopicMetadata`: epoch and every segment, sealed ones included."""
        return self._object("GET", "")

    def stats(self) -> dict[str, Any]:
        return self._object("GET", "/stats")

    def create_subscription(self, subscription: str) -> None:
        self._call("PUT", f"/subscriptions/{subscription}", {"type": "STREAM"})

    def create_segment_subscription(self, segment_topic: str, subscription: str) -> None:
        """A cursor for `subscription` on one segment alone, through the Segments admin
        API (PIP-468's body: the subscription names): what a controller leaves when it
        stops between the segments of a subscription it is making."""
        self._request("PUT", segment_admin_path(segment_topic), [subscription])

    def split(self, segment: int) -> dict[str, Any]:
        return self._object("POST", f"/split/{segment}")

    def merge(self, first: int, second: int) -> dict[str, Any]:
        return self._object("POST", f"/merge/{first}/{second}")

    def _object(self, method: str, suffix: str, body: Any = None) -> dict[str, Any]:
        """`_call` for the requests PIP-468 answers with a JSON object; any other answer
        is the API's error, named."""
        answer = self._call(method, suffix, body)
        if not isinstance(answer, dict):
            raise AdminUnreachable(f"{method} {self.paths}{suffix}: expected a JSON object, "
                                   f"got {answer!r}")
        return answer

    def _call(self, method: str, suffix: str, body: Any = None) -> Any:
        """`_request` on the topic's own path."""
        return self._request(method, self.paths + suffix, body)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of the first broker that gives a definite one. A 4xx is
        definite: refused, not applied. A broker that could not be connected to (nor the
        leader it redirected to), or that answered 503 (nobody leads), did not apply it
        either, so the next one is asked, and when none took it the request is refused
        with 503. Any other failure of a mutation (a timeout, a connection lost
        mid-request) leaves its outcome unknown and is not repeated; a read moves on.
        A broker that gave no answer is asked last from then on, as a load balancer stops
        sending to a broker that hangs: one frozen broker costs one request's timeout,
        not every request's."""
        what = f"{method} {path}"
        problems = []
        unknown = False
        for url in list(self._urls):
            try:
                response = self._http.request(method, url + path, json=body,
                                              timeout=TIMEOUT)
            except requests.RequestException as exc:
                silent = _silent_broker(exc, url)
                problems.append(f"{silent}: {type(exc).__name__}")
                unknown = unknown or not _not_sent(exc)
                self._ask_last(silent)
            else:
                if 400 <= response.status_code < 500:
                    raise AdminRefused(what, response.status_code, _reason(response))
                if response.status_code < 400:
                    return response.json() if response.content else None
                problems.append(f"{url}: {response.status_code} {_reason(response)}")
                unknown = unknown or response.status_code != 503
            if unknown and method != "GET":
                break
        if unknown:
            raise AdminUnreachable(f"{what}: no definite answer ({'; '.join(problems)})")
        raise AdminRefused(what, 503, f"no broker took it ({'; '.join(problems)})")

    def _ask_last(self, silent: str) -> None:
        """Move the broker whose URL begins `silent` to the end of the order."""
        with self._order:
            for url in self._urls:
                if silent.startswith(url):
                    log.info("admin: %s gave no answer; it is asked last from now on", url)
                    self._urls.remove(url)
                    self._urls.append(url)
                    return


def _silent_broker(exc: requests.RequestException, asked: str) -> str:
    """The URL that gave no answer: the one a redirect led to, else the one asked."""
    request = exc.request
    return str(request.url) if request is not None and request.url else asked


def _not_sent(exc: requests.RequestException) -> bool:
    """The request never reached a broker: the connection itself could not be made."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(exc, requests.ConnectionError) and isinstance(reason, NewConnectionError)


def _reason(response: requests.Response) -> str:
    try:
        return str(response.json().get("reason", response.text))
    except ValueError:
        return response.text
