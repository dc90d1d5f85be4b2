"""Which of the features our workloads exercise a system offers, asked through its admin API.

A conformance run skips what a system does not offer rather than failing it, so each
feature gets a `Support`: yes or no, and why, in words a user can check by hand. A claim in
the target file's `features` replaces the probe (a system may hide an admin path behind
authentication, or offer a feature the probe cannot see). Probes only read:

- `persistent`: every cluster's brokers answer `GET /admin/v2/clusters` with a list.
- `scalable`: `GET /admin/v2/scalable/<namespace>` (PIP-468's admin API, as
  harness/workloads/scalable_admin.py calls it) answers 2xx for an existing namespace; a 404
  means the path is not served, 503 our brokers' "disabled".
- `geo-replication`: two or more clusters whose admin APIs answer (the geo workload makes
  them known to each other through that API, as an operator would).
- `replicated-subscriptions`: geo-replication; PIP-33 itself shows only in a run.
- `migration`: a `[lookup]` service and geo-replication (the five-step migration moves a
  tenant with it).
- `authentication`: the target file gives a token (`auth_token` or `auth_token_file`), so
  the system says it requires one; the probes of a run then check that it does.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.admin_api import AdminError, admin_request
from harness.target import TargetCluster
from harness.targets.external.file import FEATURES, Feature
from harness.targets.external.target import ExternalTarget

TIMEOUT_S = 5.0
CLUSTERS_PATH = "/admin/v2/clusters"
SCALABLE_PATH = "/admin/v2/scalable/"


@dataclass(frozen=True)
class Support:
    supported: bool
    why: str


class NoAnswer(Exception):
    """No broker of a cluster answered an admin request."""


def probe_features(target: ExternalTarget) -> dict[Feature, Support]:
    """Every feature's support, by the file's claim or else by probing; in FEATURES order."""
    return _Prober(target).run()


class _Prober:
    """One round of probes: later features read earlier answers, and each cluster's
    listing is fetched once."""

    def __init__(self, target: ExternalTarget) -> None:
        self._target = target
        self._listings: dict[str, list[str] | str] = {}
        self.results: dict[Feature, Support] = {}

    def run(self) -> dict[Feature, Support]:
        probes: dict[Feature, Callable[[], Support]] = {
            "persistent": self.persistent, "scalable": self.scalable,
            "geo-replication": self.geo_replication,
            "replicated-subscriptions": self.replicated_subscriptions,
            "migration": self.migration, "authentication": self.authentication}
        claims = self._target.file.features
        for feature in FEATURES:
            claimed = claims.get(feature)
            self.results[feature] = (
                probes[feature]() if claimed is None else
                Support(claimed, f"claimed in {self._target.file.path}: "
                                 f"features.{feature} = {str(claimed).lower()}"))
        return self.results

    def listing(self, cluster: TargetCluster) -> list[str] | str:
        """The cluster names `cluster` lists, or why there are none."""
        if cluster.name not in self._listings:
            try:
                answer = _get(cluster, CLUSTERS_PATH)
            except (AdminError, NoAnswer) as exc:
                self._listings[cluster.name] = f"cluster {cluster.name}: {exc}"
            else:
                self._listings[cluster.name] = (
                    [str(name) for name in answer] if isinstance(answer, list) else
                    f"cluster {cluster.name}: GET {CLUSTERS_PATH} answered {answer!r}, "
                    f"not a list")
        return self._listings[cluster.name]

    def persistent(self) -> Support:
        for cluster in self._target.clusters:
            listing = self.listing(cluster)
            if isinstance(listing, str):
                return Support(False, listing)
        return Support(True, f"GET {CLUSTERS_PATH} answers on every cluster")

    def scalable(self) -> Support:
        cluster = self._target.clusters[0]
        try:
            namespace = _some_namespace(cluster)
            if namespace is None:
                return Support(False, f"cluster {cluster.name} has no namespace to probe "
                                      f"{SCALABLE_PATH} with; claim it in features.scalable")
            _get(cluster, SCALABLE_PATH + namespace)
        except AdminError as exc:
            meaning = " (PIP-468's admin API is not served)" if exc.status == 404 else ""
            return Support(False, f"{exc}{meaning}")
        except NoAnswer as exc:
            return Support(False, f"cluster {cluster.name}: {exc}")
        return Support(True, f"GET {SCALABLE_PATH}{namespace} answers")

    def geo_replication(self) -> Support:
        clusters = self._target.clusters
        if len(clusters) < 2:
            return Support(False, f"needs two or more clusters; the file has {len(clusters)}")
        for cluster in clusters:
            listing = self.listing(cluster)
            if isinstance(listing, str):
                return Support(False, listing)
        # The workload itself makes the clusters known to each other and replicates its
        # namespace (harness/workloads/geo_link.py), as an operator would.
        return Support(True, f"{len(clusters)} clusters whose admin APIs answer")

    def replicated_subscriptions(self) -> Support:
        geo = self.results["geo-replication"]
        if not geo.supported:
            return Support(False, f"needs geo-replication: {geo.why}")
        return Support(True, f"geo-replication is offered ({geo.why}); PIP-33 itself shows "
                             f"only in a run")

    def migration(self) -> Support:
        lookup = self._target.lookup
        if lookup is None:
            return Support(False, "needs a [lookup] service in the target file")
        geo = self.results["geo-replication"]
        if not geo.supported:
            return Support(False, f"needs geo-replication: {geo.why}")
        return Support(True, f"a lookup service at {lookup.admin_url}, and geo-replication")

    def authentication(self) -> Support:
        if self._target.file.auth_token is None:
            return Support(False, "the target file gives no auth_token: the system is taken "
                                  "to accept clients without credentials")
        return Support(True, "the target file gives an auth_token: the system requires one")


def _get(cluster: TargetCluster, path: str) -> Any:
    """The answer of the first of the cluster's brokers that answers; AdminError for an
    error status, NoAnswer when none answers."""
    problems = []
    for url in cluster.admin_urls:
        try:
            return admin_request(url, "GET", path, timeout=TIMEOUT_S)
        except (OSError, http.client.HTTPException) as exc:
            problems.append(f"{url}: {exc}")
    raise NoAnswer(f"GET {path}: no broker answered ({'; '.join(problems)})")


def _some_namespace(cluster: TargetCluster) -> str | None:
    """An existing namespace (`tenant/namespace`), `public/default` when there is one."""
    tenants = _get(cluster, "/admin/v2/tenants")
    for tenant in sorted(tenants if isinstance(tenants, list) else [],
                         key=lambda name: name != "public"):
        namespaces = _get(cluster, f"/admin/v2/namespaces/{tenant}")
        if isinstance(namespaces, list) and namespaces:
            return "public/default" if "public/default" in namespaces else str(namespaces[0])
    return None
