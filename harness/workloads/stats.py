"""What the workloads ask of the admin REST API: the broker's own count of what each
subscription has not acknowledged yet."""

from __future__ import annotations

from collections.abc import Sequence

from harness.admin_api import AdminError, admin_request

TIMEOUT = 3.0


def subscription_backlogs(admin_urls: Sequence[str], topic: str) -> dict[str, int] | None:
    """Subscription -> `msgBacklog` on `topic`, from the first broker that answers (one
    that does not own the topic redirects to the owner); None when none answers."""
    path = "/admin/v2/" + topic.replace("://", "/") + "/stats"
    for url in admin_urls:
        try:
            stats = admin_request(url, "GET", path, timeout=TIMEOUT)
        except (OSError, AdminError):
            continue
        if not isinstance(stats, dict):
            continue
        return {name: int(entry.get("msgBacklog", 0))
                for name, entry in stats.get("subscriptions", {}).items()}
    return None
