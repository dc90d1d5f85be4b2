"""What the workloads ask of the admin REST API: the broker's own count of what each
subscription has not acknowledged yet."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence

TIMEOUT = 3.0


def subscription_backlogs(admin_urls: Sequence[str], topic: str) -> dict[str, int] | None:
    """Subscription -> `msgBacklog` on `topic`, from the first broker that answers (one
    that does not own the topic redirects to the owner); None when none answers."""
    path = "/admin/v2/" + topic.replace("://", "/") + "/stats"
    for url in admin_urls:
        try:
            with urllib.request.urlopen(url + path, timeout=TIMEOUT) as response:
                stats = json.loads(response.read())
        except (OSError, ValueError):
            continue
        return {name: int(entry.get("msgBacklog", 0))
                for name, entry in stats.get("subscriptions", {}).items()}
    return None
