"""The workload interface: what drives the clients of a run.

A workload is opened (clients connected, subscriptions made and recorded before anything
is sent), run until a deadline while the nemesis works, drained after the final heal
(every consumer reads all it will, recorded as the harness's `drain`), and closed. It
records every operation itself, through the run's history writer, as the history contract
says (../shared/spec/history.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from history.writer import HistoryWriter
from scenarios.format import Workload as WorkloadSettings
from history.errors import EnvironmentProblem


class WorkloadOpenFailed(EnvironmentProblem):
    """The cluster did not accept the workload's clients in time."""


def multi_host_url(urls: Sequence[str]) -> str:
    """`pulsar://a:1`, `pulsar://b:2` -> `pulsar://a:1,b:2`: the client tries each host, so
    a lookup still succeeds while one broker is down."""
    return "pulsar://" + ",".join(url.removeprefix("pulsar://") for url in urls)


@dataclass(frozen=True)
class ClusterAccess:
    """How clients and the admin driver reach one cluster of the run."""

    name: str
    service_urls: tuple[str, ...]
    """Each broker's binary protocol address."""
    admin_urls: tuple[str, ...]
    zookeeper: str
    """The cluster's ZooKeeper ensemble, `host:port,...` without chroot."""

    @property
    def service_url(self) -> str:
        return multi_host_url(self.service_urls)


@dataclass(frozen=True)
class WorkloadContext:
    """Everything a workload gets from the run."""

    history: HistoryWriter
    settings: WorkloadSettings
    seed: int
    cluster: str
    """The cluster name recorded with every operation."""
    service_url: str
    """Every broker's binary protocol address, as the official client takes them
    (`pulsar://host:port,host:port`)."""
    admin_urls: tuple[str, ...]
    topic: str
    client_log: Path
    """Where the client library's own log goes (kept with the node logs)."""
    clusters: tuple[ClusterAccess, ...] = ()
    """Every cluster of the topology, in the scenario's order (the geo-replication
    workloads use them all; the others only `cluster`)."""


class Workload(Protocol):
    def open(self) -> None:
        """Connect and subscribe; raises EnvironmentProblem when the cluster will not take
        clients within a bounded time."""

    def run(self, deadline: float, stop: threading.Event) -> None:
        """Drive load until `deadline` (a `time.monotonic()`) or `stop`; returns once
        every producer has finished its last operation."""

    def drain(self) -> bool:
        """Read until every consumer has read all it will; records the `drain` and says
        whether it completed (`ok`) rather than timed out (`info`)."""

    def close(self) -> None:
        """Stop every client; safe to call in any state, more than once."""
