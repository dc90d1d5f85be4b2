"""`SegmentTopics` and `SegmentDrainChecker` over the Segments admin API, for a controller
running in a broker (PIP-468: "it uses the Segments admin API, which routes the request to
whichever broker currently owns that segment's namespace bundle").

Every call goes to this broker's own admin URL; a segment owned elsewhere answers with a
307 to its owner (`authoritative=true`), which `requests` follows with method and body.
So one code path serves local and remote segments, and the owner is always decided by the
same lookup the protocol uses. Calls are synchronous: the controller runs on threads.
With authentication on, every call (and every redirect it follows) carries the broker's
token as a client (`--broker-client-token-file`), as any admin request must.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from impl.storage.api import InitialPosition
from wire.admin_session import ClusterAdminSession
from wire.topic_names import segment_admin_path


class SegmentRequestFailed(Exception):
    """The owner of a segment refused or failed an operation; the controller stops the
    step, and a retry (or the next leader) repeats it."""

    def __init__(self, method: str, url: str, status: int, reason: str) -> None:
        super().__init__(f"{method} {url} answered {status}: {reason}")
        self.status = status


class AdminSegmentTopics:
    def __init__(self, admin_url: str, timeout: float = 30.0, token: str | None = None
                 ) -> None:
        self._base = admin_url.rstrip("/")
        self._timeout = timeout
        self._http = ClusterAdminSession.with_token(token)

    def _call(self, method: str, segment_topic: str, suffix: str = "",
              body: Any = None, missing_ok: bool = False) -> Any:
        url = f"{self._base}{segment_admin_path(segment_topic)}{suffix}"
        response = self._http.request(method, url, json=body, timeout=self._timeout)
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            try:
                reason = response.json().get("reason", response.text)
            except ValueError:
                reason = response.text
            raise SegmentRequestFailed(method, url, response.status_code, reason)
        return response.json() if response.content else None

    # --- SegmentTopics -------------------------------------------------------------------

    def create(self, segment_topic: str, subscriptions: Iterable[str],
               position: InitialPosition = InitialPosition.EARLIEST) -> None:
        self._call("PUT", segment_topic, body={
            "subscriptions": sorted(subscriptions),
            "initialPosition": position.name.capitalize()})

    def terminate(self, segment_topic: str) -> None:
        self._call("POST", segment_topic, "/terminate")

    def subscriptions(self, segment_topic: str) -> set[str]:
        state = self.state(segment_topic)
        return set(state["subscriptions"]) if state else set()

    def delete(self, segment_topic: str) -> None:
        self._call("DELETE", segment_topic, missing_ok=True)

    def delete_subscription(self, segment_topic: str, subscription: str) -> None:
        self._call("DELETE", segment_topic, f"/subscriptions/{subscription}", missing_ok=True)

    def state(self, segment_topic: str) -> dict[str, Any] | None:
        """The owner's view: `terminated`, `lastConfirmedEntry`, and per subscription
        `markDeletePosition`, `msgBacklog`, `drained`; None when the topic does not exist."""
        state: dict[str, Any] | None = self._call("GET", segment_topic, missing_ok=True)
        return state

    # --- SegmentDrainChecker -------------------------------------------------------------

    def is_drained(self, subscription: str, segment_topic: str) -> bool:
        state = self.state(segment_topic)
        if state is None:
            return True  # deleted: nothing left to read
        cursor = state["subscriptions"].get(subscription)
        return bool(state["terminated"]) and (cursor is None or cursor["drained"])
