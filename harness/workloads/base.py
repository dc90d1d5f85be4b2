"""The workload interface: what drives the clients of a run.

A workload is opened (clients connected, subscriptions made and recorded before anything
is sent), run until a deadline while the nemesis works, drained after the final heal
(every consumer reads all it will, recorded as the harness's `drain`), and closed. It
records every operation itself, through the run's history writer, as the history contract
says (docs/history.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.target import LookupEndpoint, TargetCluster
from harness.workloads.settings import WorkloadSettings
from history.errors import EnvironmentProblem
from history.writer import HistoryWriter


class WorkloadOpenFailed(EnvironmentProblem):
    """The cluster did not accept the workload's clients in time."""


def undisturbed(_since: float) -> bool:
    """`WorkloadContext.disturbed_since` of a run without a nemesis."""
    return False


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
    clusters: tuple[TargetCluster, ...] = ()
    """Every cluster of the topology, in the scenario's order (the geo-replication
    workloads use them all; the others only `cluster`)."""
    lookup: LookupEndpoint | None = None
    """The Target's lookup service (the migration workload's clients go through it)."""
    disturbed_since: Callable[[float], bool] = undisturbed
    """Whether a fault was on, or the nemesis acted, at some moment from `since` (a
    `time.monotonic()`) until now, or shortly before it while its effects may last: what a
    workload that judges an exchange as it goes (the contract's probes) asks before it
    calls a difference a failure."""


class Workload(Protocol):
    @property
    def topic(self) -> str:
        """The topic it drives, which may not be the context's (the geo and migration
        workloads move it into their own namespace): whose owner the nemesis's `owner`
        target means, and whose namespace `unlink-replication` changes."""

    def open(self) -> None:
        """Connect and subscribe; raises EnvironmentProblem when the cluster will not take
        clients within a bounded time."""

    def run(self, deadline: float, stop: threading.Event) -> None:
        """Drive load until `deadline` (a `time.monotonic()`) or `stop`; returns once
        every producer has finished its last operation."""

    def drain(self) -> bool:
        """Read until every consumer has read all it will; records the `drain` and says
        whether it completed (`ok`) rather than ended short (`info`: it timed out, a late
        subscription failed, or a probe group could not run)."""

    def close(self) -> None:
        """Stop every client; safe to call in any state, more than once."""
