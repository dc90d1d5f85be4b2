"""What every Deployment of a topology shares, whatever its backend: the timeouts the
Target promises, taken from the topology; the lookup service it may start beside the
clusters; and use as a context manager, `with deploy(...) as target:`, which tears the
deployment down however the block ends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self

from harness.target import LookupEndpoint
from harness.targets.lookup import DeployedLookup
from harness.topology import Topology, metadata_loss_shutdown_s


class TopologyDeployment(ABC):
    """The base of our backends' Deployments (harness/backends.py): a subclass starts
    and stops its nodes and the lookup service, and offers the clusters and controls."""

    def __init__(self, topology: Topology, lookup: DeployedLookup) -> None:
        self._topology = topology
        self._lookup = lookup

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:  # Ctrl-C too: whatever started must go
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def session_timeout_s(self) -> float:
        return self._topology.session_timeout_ms / 1000

    @property
    def snapshot_timeout_s(self) -> float:
        return self._topology.snapshot_timeout_s

    @property
    def metadata_loss_shutdown_s(self) -> float | None:
        """Our reference brokers' bound (PIP-57); a backend of another implementation
        overrides it."""
        return metadata_loss_shutdown_s(self._topology.session_expired_policy,
                                        self.session_timeout_s)

    @property
    def lookup(self) -> LookupEndpoint | None:
        return self._lookup.endpoint
