"""The brokers' health during the load: `health` observations.

A broker can stay up and answer while it cannot serve: cut from its metadata store, its
session lost, it owns nothing and fails every lookup. Clients that know other brokers step
around it, so no checker of what the clients saw finds it; but an orchestrator that
replaces only dead processes never replaces it either, which is why PIP-57 has a broker
under the `reconnect` policy shut down once its retries are spent. The probe asks each
broker's health check (Pulsar's `GET /admin/v2/brokers/health`) about once a second and
records what it answered, for `zombie-broker` to judge.

A reading's `detail` is `{"broker": name, "answer": A}`, A one of:

- `healthy`: a 2xx answer;
- `unhealthy`: a 5xx answer, the broker up and saying it cannot serve (`status` and
  `reason` beside it);
- `down`: the connection refused, nothing listening;
- `unknown`: no answer in time, or an answer that says nothing of health (a 4xx: the
  probe's credentials, say), with `error`.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from typing import Any

from harness.admin_api import AdminError, admin_request
from harness.target import Target
from history.writer import HistoryWriter

HEALTH_PATH = "/admin/v2/brokers/health"
INTERVAL_S = 1.0
"""Between rounds: a broker stuck for the bounds scenarios set (tens of seconds) shows as
tens of readings."""
TIMEOUT_S = 2.0
REASON_CHARS = 200


def probe_health(target: Target, history: HistoryWriter, stop: threading.Event,
                 deadline: float) -> None:
    """Read every broker's health, round after round, until `stop` or `deadline` (on the
    monotonic clock)."""
    brokers = [(cluster.name, node, url) for cluster in target.clusters
               for node, url in cluster.broker_admin_urls.items()]
    while not stop.is_set() and time.monotonic() < deadline:
        for cluster, node, url in brokers:
            history.record("observer", "ok", "health", value=node, cluster=cluster,
                           detail={"broker": node, **read_health(url)})
        stop.wait(INTERVAL_S)


def read_health(admin_url: str) -> dict[str, Any]:
    """What the broker at `admin_url` answered, as a reading's `detail` (without `broker`)."""
    try:
        admin_request(admin_url, "GET", HEALTH_PATH, timeout=TIMEOUT_S)
    except AdminError as exc:
        if exc.status >= 500:
            return {"answer": "unhealthy", "status": exc.status,
                    "reason": str(exc)[-REASON_CHARS:]}
        return {"answer": "unknown", "status": exc.status, "error": str(exc)[-REASON_CHARS:]}
    except OSError as exc:  # URLError among them
        cause = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(cause, ConnectionRefusedError):
            return {"answer": "down"}
        return {"answer": "unknown", "error": type(cause).__name__}
    return {"answer": "healthy"}
