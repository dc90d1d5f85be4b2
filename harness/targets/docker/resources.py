"""A run's containers and networks, found by their `starquake` label: listing, log
collection and removal.

Everything here works from labels alone, so it serves a harness tearing down its own run,
`starquake cluster down RUN_ID` for a run whose harness is gone, and `--all` for whatever
any run left behind.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import docker.errors
from docker import DockerClient
from docker.models.containers import Container
from docker.models.networks import Network

from harness.targets.docker.engine import (
    CLUSTER_LABEL,
    NETNS_ROLE,
    NODE_LABEL,
    ROLE_LABEL,
    RUN_LABEL,
)
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

T = TypeVar("T")


class TeardownIncomplete(EnvironmentProblem):
    """Something labelled for removal is still there; the message names it."""


def _label_filter(run_id: str | None) -> dict[str, str]:
    return {"label": RUN_LABEL if run_id is None else f"{RUN_LABEL}={run_id}"}


def run_containers(client: DockerClient, run_id: str | None) -> list[Container]:
    """Containers of run `run_id` (of every run when None), stopped ones included."""
    # The SDK lists, then inspects each; one removed in between (by a reaper's sweep or a
    # second teardown) is gone, not an error.
    return list(client.containers.list(all=True, filters=_label_filter(run_id),
                                       ignore_removed=True))


def run_networks(client: DockerClient, run_id: str | None) -> list[Network]:
    return list(client.networks.list(filters=_label_filter(run_id)))


@dataclass
class RunSummary:
    run_id: str
    nodes: dict[str, str] = field(default_factory=dict)
    """Node name -> its process's status (`running`, `paused`, `exited`)."""
    clusters: set[str] = field(default_factory=set)
    networks: list[str] = field(default_factory=list)


def list_runs(client: DockerClient) -> list[RunSummary]:
    """Every run with something left on the engine, oldest first (run ids sort by time)."""
    runs: dict[str, RunSummary] = {}

    def summary(labels: dict[str, str]) -> RunSummary:
        run_id = labels[RUN_LABEL]
        return runs.setdefault(run_id, RunSummary(run_id))

    for container in run_containers(client, None):
        labels = container.labels
        entry = summary(labels)
        if CLUSTER_LABEL in labels:
            entry.clusters.add(labels[CLUSTER_LABEL])
        if labels.get(ROLE_LABEL) != NETNS_ROLE and NODE_LABEL in labels:
            entry.nodes[labels[NODE_LABEL]] = container.status
    for network in run_networks(client, None):
        summary(network.attrs.get("Labels") or {}).networks.append(network.name)
    return [runs[k] for k in sorted(runs)]


def save_logs(client: DockerClient, run_id: str, run_dir: Path) -> list[Path]:
    """Write each node's output (all its restarts) to `run_dir/logs/<node>.log`."""
    logs_dir = run_dir / "logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for container in run_containers(client, run_id):
        labels = container.labels
        if labels.get(ROLE_LABEL) == NETNS_ROLE or NODE_LABEL not in labels:
            continue
        path = logs_dir / f"{labels[NODE_LABEL]}.log"
        try:
            path.write_bytes(container.logs(stdout=True, stderr=True))
        except docker.errors.APIError as exc:
            path.write_text(f"(log unavailable: {exc.explanation or exc})\n")
        written.append(path)
    return sorted(written)


def _parallel(action: Callable[[T], object], items: Iterable[T]) -> None:
    items = list(items)
    if not items:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        for future in [pool.submit(action, item) for item in items]:
            future.result()


def _remove_container(container: Container) -> None:
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass  # already gone: another teardown got there first
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: removal already in progress
            raise


def _remove_network(network: Network) -> None:
    try:
        network.remove()
    except docker.errors.NotFound:
        pass  # another teardown got there first
    except docker.errors.APIError as exc:
        # A container still leaving holds an endpoint; the next pass tries again, and
        # what stays is reported by name at the end.
        if "active endpoints" not in str(exc.explanation or exc):
            raise
        log.info("network %s still has endpoints; trying again", network.name)


def _left_behind(client: DockerClient, run_id: str | None) -> tuple[list[str], list[str]]:
    """What removal left, by name: what it should have removed, and the networks no
    container holds that the engine still will not remove. Those are the engine's fault
    (a stale endpoint, which only a restart of dockerd clears): they hold no process and
    no iptables rule of ours, so a teardown names them but does not fail for them."""
    left = [c.name for c in run_containers(client, run_id)]
    stale: list[str] = []
    for network in run_networks(client, run_id):
        try:
            network.reload()
        except docker.errors.NotFound:
            continue  # another teardown removed it meanwhile
        (left if network.attrs.get("Containers") else stale).append(network.name)
    return left, stale


@dataclass(frozen=True)
class Removed:
    containers: int
    networks: int
    runs: tuple[str, ...]


REMOVAL_PASSES = 3
"""Passes over a run's resources before what is left is reported as left behind."""
REMOVAL_PAUSE_S = 0.5

def remove_run(client: DockerClient, run_id: str | None) -> Removed:
    """Remove every container and network of run `run_id` (of every run when None).

    Node processes go first, then the containers holding their network namespaces (their
    iptables rules go with them), then the networks. A harness interrupted while it
    created a container leaves the engine finishing that creation after our listing, so
    removal goes over the run again (at most `REMOVAL_PASSES` times) until nothing is
    left. Raises TeardownIncomplete naming what is left, unless all that is left is networks
    the engine keeps with no container attached (its stale endpoints): those get a warning.
    """
    containers_seen: set[str] = set()
    networks_seen: set[str] = set()
    runs: set[str] = set()
    for attempt in range(REMOVAL_PASSES):
        if attempt:
            time.sleep(REMOVAL_PAUSE_S)
        containers = run_containers(client, run_id)
        networks = run_networks(client, run_id)
        if not containers and not networks:
            break
        runs |= ({c.labels.get(RUN_LABEL, "") for c in containers}
                 | {(n.attrs.get("Labels") or {}).get(RUN_LABEL, "") for n in networks})
        by_kind: dict[bool, list[Container]] = defaultdict(list)
        for container in containers:
            by_kind[container.labels.get(ROLE_LABEL) == NETNS_ROLE].append(container)
        try:
            _parallel(_remove_container, by_kind[False])
            _parallel(_remove_container, by_kind[True])
            _parallel(_remove_network, networks)
        except docker.errors.APIError as exc:
            raise TeardownIncomplete(f"removing run {run_id or '(all)'} failed: "
                                     f"{exc.explanation or exc}") from None
        containers_seen |= {c.name for c in containers}
        networks_seen |= {n.name for n in networks}
    left, stale = _left_behind(client, run_id)
    if left:
        raise TeardownIncomplete(f"still present after removal: {', '.join(left + stale)}")
    if stale:
        log.warning("the Docker engine keeps %s with no container attached (a stale "
                    "endpoint of the engine's; restarting dockerd clears it)",
                    ", ".join(stale))
    containers_removed = len(containers_seen)
    networks_removed = len(networks_seen - set(stale))
    log.info("removed %d containers, %d networks of %s", containers_removed, networks_removed,
             run_id or "every run")
    return Removed(containers_removed, networks_removed, tuple(sorted(r for r in runs if r)))
