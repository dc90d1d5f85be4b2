"""What the workloads ask of the admin REST API: the broker's own count of what each
subscription has not acknowledged yet, the subscriptions a topic has, and the few changes
a workload makes (a partitioned topic, a topic's policy)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

from harness.admin_api import AdminError, admin_request

TIMEOUT = 3.0
T = TypeVar("T")


def subscription_backlogs(admin_urls: Sequence[str], topic: str) -> dict[str, int] | None:
    """Subscription -> `msgBacklog` on `topic`; None when no broker answers."""
    stats = first_answer(admin_urls, topic_path(topic) + "/stats", dict)
    if stats is None:
        return None
    return {name: int(entry.get("msgBacklog", 0))
            for name, entry in stats.get("subscriptions", {}).items()}


def topic_subscriptions(admin_urls: Sequence[str], topic: str) -> list[str] | None:
    """The subscriptions the topic lists, sorted; None when no broker answers."""
    names = first_answer(admin_urls, topic_path(topic) + "/subscriptions", list)
    if names is None:
        return None
    return sorted(str(name) for name in names)


def topic_path(topic: str) -> str:
    """The admin API's path of `topic`: `/admin/v2/persistent/{t}/{ns}/{local}`."""
    return "/admin/v2/" + topic.replace("://", "/")


REDIRECTS = 3
"""How many redirects a change follows from one broker: Pulsar sends a request for a topic
whose bundle nobody owns yet to its load manager's leader, which sends it on, marked
`authoritative=true`, to the broker it assigns the bundle to."""


def owner_request(admin_urls: Sequence[str], method: str, path: str,
                  body: object = None) -> Any:
    """A change (PUT, POST, DELETE) asked of each broker in turn until one other than a
    redirect answers. A broker that does not own the topic redirects, and `admin_request`
    follows no redirect for a change, so it is followed here, with the same method and
    body, as Pulsar's own admin client does: asked again without the redirect's
    `authoritative=true`, the broker a topic not owned yet is assigned to would redirect
    once more, and every broker can. Raises a broker's refusal (`AdminError`), or `OSError`
    when every broker redirected past `REDIRECTS` or was out of reach."""
    for url in admin_urls:
        try:
            return _followed(url.rstrip("/") + path, method, body)
        except AdminError as exc:
            if exc.status != 307:
                raise
        except OSError:
            continue
    raise OSError(f"no broker took {method} {path}")


def _followed(url: str, method: str, body: object) -> Any:
    """The answer to `method url`, following up to `REDIRECTS` redirects."""
    for _ in range(REDIRECTS):
        try:
            return admin_request(url, method, "", body, timeout=TIMEOUT)
        except AdminError as exc:
            if exc.status != 307 or not exc.location:
                raise
            url = exc.location
    return admin_request(url, method, "", body, timeout=TIMEOUT)


def first_answer(admin_urls: Sequence[str], path: str, kind: type[T]) -> T | None:
    """The answer, of JSON type `kind`, of the first broker that gives one (one that does
    not own the topic redirects to the owner, which `admin_request` follows for a GET)."""
    for url in admin_urls:
        try:
            answer = admin_request(url, "GET", path, timeout=TIMEOUT)
        except (OSError, AdminError):
            continue
        if isinstance(answer, kind):
            return answer
    return None


DEDUPLICATION_APPLIED_POLL_S = 0.2


def deduplicate(admin_urls: Sequence[str], topic: str, within_s: float) -> str | None:
    """Switch broker-side deduplication on for `topic` (its `deduplicationEnabled` policy)
    and wait up to `within_s` until its owner says the policy is in force there: Pulsar
    applies a topic policy asynchronously. None once it is; else why not. The topic must
    exist, and the target allow topic policies (Pulsar's `topicLevelPoliciesEnabled`)."""
    policy = topic_path(topic) + "/deduplicationEnabled"
    deadline = time.monotonic() + within_s
    try:
        owner_request(admin_urls, "POST", policy, True)
        while time.monotonic() < deadline:
            if owner_request(admin_urls, "GET", policy + "?applied=true") is True:
                return None
            time.sleep(DEDUPLICATION_APPLIED_POLL_S)
    except (AdminError, OSError) as exc:
        return f"POST {policy}: {exc}"
    return f"deduplication never took effect on {topic} within {within_s:g} s"
