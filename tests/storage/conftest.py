"""Real bookie processes for storage tests, registered in the test's ZooKeeper chroot and
always stopped after the test."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.ports import free_ports
from harness.targets.local.cluster import HOST, BookieNode
from harness.targets.local.processes import LocalProcess
from impl.metadata import paths
from impl.metadata.store import MetadataStore
from impl.mutants import Mutants
from impl.storage.context import ManagedLedgerConfig
from impl.storage.factory import ManagedLedgerFactory


@dataclass
class Bookie:
    node: BookieNode
    store: MetadataStore
    data_dir: Path

    @property
    def address(self) -> str:
        return self.node.address

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Until it accepts connections and its registration is in ZooKeeper."""
        self.node.wait_serving(timeout)
        deadline = time.monotonic() + timeout
        while not self.store.exists(paths.bookie_registration(self.address)):
            assert time.monotonic() < deadline, self.node.process.log_tail()
            time.sleep(0.05)

    def kill(self) -> None:
        self.node.kill()

    def restart(self) -> None:
        self.node.process.stop()
        self.node.start()
        self.wait_serving()


@pytest.fixture
def start_bookie(tmp_path: Path, zk_connect_string: str,
                 zk_store: Callable[..., MetadataStore]) -> Iterator[Callable[..., Bookie]]:
    """`start_bookie(mutants="", *flags)` -> a serving, registered bookie process."""
    bookies: list[Bookie] = []
    store = zk_store()

    def start(mutants: str = "", *flags: str) -> Bookie:
        (port,) = free_ports(1, HOST)
        index = len(bookies)
        data_dir = tmp_path / f"bookie-{index}"
        command = [sys.executable, "-m", "impl.bookie", "--port", str(port),
                   "--data-dir", str(data_dir), "--zk", zk_connect_string,
                   "--session-timeout-ms", "4000"]
        if mutants:
            command += ["--mutants", mutants]
        command += flags
        process = LocalProcess(f"bookie-{index}", command, tmp_path / f"bookie-{index}.log")
        bookie = Bookie(BookieNode(index, port, process), store, data_dir)
        bookies.append(bookie)
        bookie.node.start()
        bookie.wait_serving()
        return bookie

    yield start
    for bookie in bookies:
        bookie.node.stop()


@pytest.fixture
def make_factory(zk_store: Callable[..., MetadataStore]) -> Callable[..., ManagedLedgerFactory]:
    """`make_factory(mutants="")` -> a factory with a ZooKeeper session of its own (one
    per simulated broker). Use it inside the test's event loop and close it there."""

    def make(mutants: str = "", **config: Any) -> ManagedLedgerFactory:
        return ManagedLedgerFactory(zk_store(), Mutants.parse(mutants),
                                    config=ManagedLedgerConfig(**config))

    return make
